// i915_shim: makes Mesa's nouveau drm-shim look like an Intel i915 GPU, so that ANV (Mesa's Intel
// Vulkan driver) creates a device and compiles shaders on a machine without an Intel GPU.
//
// Preload it *before* libnouveau_noop_drm_shim.so (Debian packages no Intel drm-shim). The nouveau
// shim still provides the fake /dev/dri/renderD128, its stat/readlink/mmap answers, GEM_CLOSE,
// GET_CAP and syncobjs; this library changes three things:
//   - the PCI identity that libdrm reads from sysfs (vendor, device, revision, uevent): Intel's,
//     with the device id from VKGMM_I915_PCI_ID (default 0x56a0, DG2-512);
//   - the DRM version ioctl: driver name "i915";
//   - the i915 driver ioctls: parameters and queries are answered here, buffers are forwarded to
//     the nouveau shim's GEM_NEW / GEM_INFO so they are real, mappable memory, and everything that
//     would run work on a GPU (execbuffer, waits, domains) succeeds without doing anything.
// VKGMM_I915_REVISION sets the PCI revision (stepping); VKGMM_I915_SHIM_DEBUG=1 logs every i915
// request to stderr, which is how the list of answers below was found.
//
// Built by scripts/gpu_compilers.sh against trixie's uapi headers:
//   cc -shared -fPIC -O2 -isystem DIR/usr/include -o i915_shim.so i915_shim.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <drm/drm.h>
#include <drm/i915_drm.h>
#include <drm/nouveau_drm.h>

// ---------------------------------------------------------------------------------------------
// The faked chip

struct chip {
  uint32_t pci_id;
  uint32_t revision;
  bool discrete;       // has device-local memory (a second memory region)
  uint32_t subslices;  // Xe-cores (dual subslices) in the one slice i915 reports on Xe-HP and later
  uint32_t eus;        // EUs per subslice
};

static struct chip chip;
static bool debug;

// Shapes of the products named by the targets; anything else gets a small integrated part. The
// topology feeds thread counts, not code generation, so rough numbers are enough.
static void chip_init(void) {
  const char *id = getenv("VKGMM_I915_PCI_ID");
  chip.pci_id = id ? (uint32_t)strtoul(id, NULL, 0) : 0x56a0;
  if ((chip.pci_id & 0xff00) == 0x5600)  // DG2 (Arc A-series): Arc A770 has 32 Xe-cores of 16 EUs
    chip = (struct chip){chip.pci_id, 0x08, true, 32, 16};
  else if ((chip.pci_id & 0xff00) == 0xe200)  // Battlemage (Arc B-series): B580 has 20 Xe2-cores of 8 EUs
    chip = (struct chip){chip.pci_id, 0x00, true, 20, 8};
  else
    chip = (struct chip){chip.pci_id, 0x00, false, 8, 16};
  const char *rev = getenv("VKGMM_I915_REVISION");
  if (rev) chip.revision = (uint32_t)strtoul(rev, NULL, 0);
  debug = getenv("VKGMM_I915_SHIM_DEBUG") && atoi(getenv("VKGMM_I915_SHIM_DEBUG")) > 0;
}

// Called once, from whichever wrapper runs first.
static void init_once(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, chip_init);
}

#define LOG(...)                                      \
  do {                                                \
    if (debug) fprintf(stderr, "i915_shim: " __VA_ARGS__); \
  } while (0)

// ---------------------------------------------------------------------------------------------
// sysfs: libdrm learns the PCI ids from /sys/dev/char/226:N/device/{vendor,device,...}, files the
// nouveau shim fakes with NVIDIA's ids. We answer those paths first.

// The nouveau shim's fake PCI slot; libdrm may also read the files under its /sys/devices path.
#define SLOT "0000:01:00.0"

// Returns a memfd holding the faked contents of PATH, or -1 when PATH is not one we fake.
static int sysfs_fake_open(const char *path) {
  static const char char_dir[] = "/sys/dev/char/226:";
  static const char pci_dir[] = "/sys/devices/pci0000:00/" SLOT "/";
  const char *attr;
  if (strncmp(path, char_dir, sizeof char_dir - 1) == 0) {
    attr = strstr(path, "/device/");
    if (!attr) return -1;
    attr += strlen("/device/");
  } else if (strncmp(path, pci_dir, sizeof pci_dir - 1) == 0) {
    attr = path + sizeof pci_dir - 1;
  } else {
    return -1;
  }

  char text[256];
  if (strcmp(attr, "vendor") == 0 || strcmp(attr, "subsystem_vendor") == 0)
    snprintf(text, sizeof text, "0x8086\n");
  else if (strcmp(attr, "device") == 0 || strcmp(attr, "subsystem_device") == 0)
    snprintf(text, sizeof text, "0x%04x\n", chip.pci_id);
  else if (strcmp(attr, "revision") == 0)
    snprintf(text, sizeof text, "0x%02x\n", chip.revision);
  else if (strcmp(attr, "uevent") == 0)
    snprintf(text, sizeof text,
             "DRIVER=i915\nPCI_CLASS=30000\nPCI_ID=8086:%04X\nPCI_SUBSYS_ID=8086:%04X\n"
             "PCI_SLOT_NAME=" SLOT "\n",
             chip.pci_id, chip.pci_id);
  else
    return -1;

  int fd = memfd_create("i915_shim_sysfs", MFD_CLOEXEC);
  if (fd < 0) return -1;
  size_t len = strlen(text);
  if (write(fd, text, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET) != 0) {
    close(fd);
    return -1;
  }
  LOG("sysfs %s -> %s", path, text);
  return fd;
}

// Looks up the next definition of a libc function (the nouveau shim's, then libc's).
static void *next_fn(const char *name) {
  void *fn = dlsym(RTLD_NEXT, name);
  if (!fn) {
    fprintf(stderr, "i915_shim: no %s after this library\n", name);
    abort();
  }
  return fn;
}

// open's mode is only passed with O_CREAT / O_TMPFILE; read it the way libc does.
static mode_t open_mode(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}

typedef int open_fn(const char *, int, ...);
typedef FILE *fopen_fn(const char *, const char *);

// open / open64: a faked sysfs file, or the next library's NAME (cached in *NEXT).
static int open_or_next(const char *name, open_fn **next, const char *path, int flags, mode_t mode) {
  init_once();
  int fd = sysfs_fake_open(path);
  if (fd >= 0) return fd;
  if (!*next) *next = (open_fn *)next_fn(name);
  return (*next)(path, flags, mode);
}

// fopen / fopen64 likewise; libdrm reads sysfs with these.
static FILE *fopen_or_next(const char *name, fopen_fn **next, const char *path, const char *how) {
  init_once();
  int fd = sysfs_fake_open(path);
  if (fd >= 0) return fdopen(fd, "r");
  if (!*next) *next = (fopen_fn *)next_fn(name);
  return (*next)(path, how);
}

int open(const char *path, int flags, ...) {
  static open_fn *next;
  va_list ap;
  va_start(ap, flags);
  mode_t mode = open_mode(flags, ap);
  va_end(ap);
  return open_or_next("open", &next, path, flags, mode);
}

int open64(const char *path, int flags, ...) {
  static open_fn *next;
  va_list ap;
  va_start(ap, flags);
  mode_t mode = open_mode(flags, ap);
  va_end(ap);
  return open_or_next("open64", &next, path, flags, mode);
}

FILE *fopen(const char *path, const char *how) {
  static fopen_fn *next;
  return fopen_or_next("fopen", &next, path, how);
}

FILE *fopen64(const char *path, const char *how) {
  static fopen_fn *next;
  return fopen_or_next("fopen64", &next, path, how);
}

// ---------------------------------------------------------------------------------------------
// ioctl plumbing

static int (*next_ioctl)(int, unsigned long, ...);

// The kernel's convention: -1 with errno. Returning a bare negative number (as drm-shim's own
// handlers do) would leave a stale errno, and libdrm retries forever on a stale EINTR.
static int fail(int err) {
  errno = err;
  return -1;
}

// Sends a nouveau ioctl to the nouveau shim underneath.
static int nouveau_ioctl(int fd, unsigned long request, void *arg) {
  int ret = next_ioctl(fd, request, arg);
  return ret == 0 ? 0 : fail(ret < -1 ? -ret : EINVAL);
}

// Copies STR into a drm_version string field the way the kernel does: up to the caller's length,
// and the full length back.
static void version_string(const char *str, char *buf, __kernel_size_t *len) {
  size_t n = strlen(str);
  if (buf && *len) memcpy(buf, str, n < *len ? n : *len);
  *len = n;
}

// DRM_IOCTL_VERSION: ANV tells i915 from xe (and from nouveau) by this name.
static int drm_version(struct drm_version *v) {
  v->version_major = 1;
  v->version_minor = 6;
  v->version_patchlevel = 0;
  version_string("i915", v->name, &v->name_len);
  version_string("20201103", v->date, &v->date_len);
  version_string("Intel Graphics (vkgmm i915_shim)", v->desc, &v->desc_len);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// DRM_I915_GETPARAM

static int get_param(drm_i915_getparam_t *gp) {
  int value;
  switch (gp->param) {
    case I915_PARAM_CHIPSET_ID: value = (int)chip.pci_id; break;
    case I915_PARAM_REVISION: value = (int)chip.revision; break;
    // The timestamp clock of DG2 and later parts.
    case I915_PARAM_CS_TIMESTAMP_FREQUENCY: value = 19200000; break;
    // Features ANV requires (wait, execbuf2, softpin, syncobj arrays) or uses when present.
    case I915_PARAM_HAS_WAIT_TIMEOUT:
    case I915_PARAM_HAS_EXECBUF2:
    case I915_PARAM_HAS_EXEC_SOFTPIN:
    case I915_PARAM_HAS_EXEC_FENCE_ARRAY:
    case I915_PARAM_HAS_EXEC_TIMELINE_FENCES:
    case I915_PARAM_HAS_EXEC_ASYNC:
    case I915_PARAM_HAS_EXEC_CAPTURE:
    case I915_PARAM_HAS_CONTEXT_ISOLATION: value = 1; break;
    // 1 = write-combined mmap; 4 = GEM_MMAP_OFFSET, the only mapping path we forward.
    case I915_PARAM_MMAP_VERSION: value = 1; break;
    case I915_PARAM_MMAP_GTT_VERSION: value = 4; break;
    case I915_PARAM_HAS_USERPTR_PROBE: value = 0; break;
    // Only a fallback for kernels without the topology query, answered consistently anyway.
    case I915_PARAM_SLICE_MASK: value = 1; break;
    case I915_PARAM_SUBSLICE_MASK: value = (int)((1ull << chip.subslices) - 1); break;
    case I915_PARAM_SUBSLICE_TOTAL: value = (int)chip.subslices; break;
    case I915_PARAM_EU_TOTAL: value = (int)(chip.subslices * chip.eus); break;
    // Everything else (perf, PXP, ...) is absent, as on a kernel without it.
    default:
      LOG("GETPARAM %d: not supported\n", gp->param);
      return fail(EINVAL);
  }
  LOG("GETPARAM %d = %d\n", gp->param, value);
  *gp->value = value;
  return 0;
}

// ---------------------------------------------------------------------------------------------
// DRM_I915_QUERY: each item is asked twice, first with length 0 for the size, then with a buffer.
// Each writer returns the size it needs and fills DATA only when it is not NULL.

// One slice of chip.subslices subslices of chip.eus EUs, the way i915 reports Xe-HP and later.
// The EU mask is always 2 bytes a subslice: Mesa reads 16 EU bits a subslice on those parts.
static int32_t write_topology(void *data) {
  const uint32_t ss_bytes = (chip.subslices + 7) / 8, eu_stride = 2;
  const int32_t size = (int32_t)(sizeof(struct drm_i915_query_topology_info) + 1 + ss_bytes +
                                 chip.subslices * eu_stride);
  struct drm_i915_query_topology_info *t = data;
  if (!t) return size;
  memset(t, 0, (size_t)size);
  t->max_slices = 1;
  t->max_subslices = (uint16_t)chip.subslices;
  t->max_eus_per_subslice = 16;
  t->subslice_offset = 1;
  t->subslice_stride = (uint16_t)ss_bytes;
  t->eu_offset = (uint16_t)(1 + ss_bytes);
  t->eu_stride = (uint16_t)eu_stride;
  t->data[0] = 1;  // slice 0 present
  for (uint32_t ss = 0; ss < chip.subslices; ss++) {
    t->data[t->subslice_offset + ss / 8] |= (uint8_t)(1u << (ss % 8));
    uint32_t eu_mask = (1u << chip.eus) - 1;
    t->data[t->eu_offset + ss * eu_stride] = (uint8_t)eu_mask;
    t->data[t->eu_offset + ss * eu_stride + 1] = (uint8_t)(eu_mask >> 8);
  }
  return size;
}

// One render engine (graphics + compute queue) and one copy engine.
static int32_t write_engines(void *data) {
  const uint32_t n = 2;
  const int32_t size = (int32_t)(sizeof(struct drm_i915_query_engine_info) +
                                 n * sizeof(struct drm_i915_engine_info));
  struct drm_i915_query_engine_info *info = data;
  if (!info) return size;
  memset(info, 0, (size_t)size);
  info->num_engines = n;
  info->engines[0].engine.engine_class = I915_ENGINE_CLASS_RENDER;
  info->engines[1].engine.engine_class = I915_ENGINE_CLASS_COPY;
  for (uint32_t i = 0; i < n; i++) info->engines[i].flags = I915_ENGINE_INFO_HAS_LOGICAL_INSTANCE;
  return size;
}

// System memory, plus fully CPU-visible device memory on discrete parts. 4 GiB each: the nouveau
// shim backs every buffer with one 4 GiB memfd.
static int32_t write_memory_regions(void *data) {
  const uint32_t n = chip.discrete ? 2 : 1;
  const int32_t size = (int32_t)(sizeof(struct drm_i915_query_memory_regions) +
                                 n * sizeof(struct drm_i915_memory_region_info));
  struct drm_i915_query_memory_regions *m = data;
  if (!m) return size;
  memset(m, 0, (size_t)size);
  m->num_regions = n;
  for (uint32_t i = 0; i < n; i++) {
    struct drm_i915_memory_region_info *r = &m->regions[i];
    r->region.memory_class = i == 0 ? I915_MEMORY_CLASS_SYSTEM : I915_MEMORY_CLASS_DEVICE;
    r->probed_size = r->unallocated_size = 4ull << 30;
    if (i > 0) r->probed_cpu_visible_size = r->unallocated_cpu_visible_size = 4ull << 30;
  }
  return size;
}

static int32_t (*query_writer(uint64_t id))(void *) {
  switch (id) {
    case DRM_I915_QUERY_TOPOLOGY_INFO:
    case DRM_I915_QUERY_GEOMETRY_SUBSLICES:  // every subslice can run 3D work
      return write_topology;
    case DRM_I915_QUERY_ENGINE_INFO: return write_engines;
    case DRM_I915_QUERY_MEMORY_REGIONS: return write_memory_regions;
    // No hwconfig blob (Mesa keeps its table's values), no perf configs, no GuC version.
    default: return NULL;
  }
}

static int query(struct drm_i915_query *q) {
  struct drm_i915_query_item *items = (void *)(uintptr_t)q->items_ptr;
  for (uint32_t i = 0; i < q->num_items; i++) {
    struct drm_i915_query_item *item = &items[i];
    int32_t (*writer)(void *) = query_writer(item->query_id);
    if (!writer) {
      LOG("QUERY %llu: not supported\n", (unsigned long long)item->query_id);
      item->length = -EINVAL;  // per-item errors go in the length, the ioctl itself succeeds
      continue;
    }
    int32_t size = writer(NULL);
    LOG("QUERY %llu: %d bytes (asked with %d)\n", (unsigned long long)item->query_id, size,
        item->length);
    if (item->length == 0) {
      item->length = size;
    } else if (item->length < size) {
      item->length = -EINVAL;
    } else {
      writer((void *)(uintptr_t)item->data_ptr);
      item->length = size;
    }
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Contexts and VMs: ids only; nothing ever runs on them.

static uint32_t next_id(void) {
  static uint32_t last;
  return __atomic_add_fetch(&last, 1, __ATOMIC_RELAXED);
}

// Walks a context-create extension chain, refusing protected (PXP) contexts as a machine without
// PXP does, so ANV offers no protected memory.
static int context_create(struct drm_i915_gem_context_create_ext *c, bool has_ext) {
  if (has_ext && (c->flags & I915_CONTEXT_CREATE_FLAGS_USE_EXTENSIONS)) {
    for (uint64_t p = c->extensions; p;) {
      struct i915_user_extension *ext = (void *)(uintptr_t)p;
      if (ext->name == I915_CONTEXT_CREATE_EXT_SETPARAM) {
        struct drm_i915_gem_context_create_ext_setparam *sp = (void *)ext;
        if (sp->param.param == I915_CONTEXT_PARAM_PROTECTED_CONTENT) return fail(ENODEV);
      }
      p = ext->next_extension;
    }
  }
  c->ctx_id = next_id();
  LOG("CONTEXT_CREATE -> %u\n", c->ctx_id);
  return 0;
}

static int context_get_param(struct drm_i915_gem_context_param *p) {
  switch (p->param) {
    case I915_CONTEXT_PARAM_GTT_SIZE: p->value = 1ull << 48; break;  // 48-bit PPGTT
    // 0 = no VM control: ANV then makes one context with an engine list, the simplest path.
    case I915_CONTEXT_PARAM_VM: p->value = 0; break;
    case I915_CONTEXT_PARAM_PRIORITY: p->value = 0; break;
    case I915_CONTEXT_PARAM_RECOVERABLE: p->value = 1; break;
    default:
      LOG("CONTEXT_GETPARAM %llu: not supported\n", (unsigned long long)p->param);
      return fail(EINVAL);
  }
  LOG("CONTEXT_GETPARAM %llu = %llu\n", (unsigned long long)p->param,
      (unsigned long long)p->value);
  return 0;
}

static int vm_create(struct drm_i915_gem_vm_control *vm) {
  vm->vm_id = next_id();
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Buffers: real memory from the nouveau shim, so ANV can map and fill them.

static int gem_new(int fd, uint64_t *size, uint32_t *handle) {
  struct drm_nouveau_gem_new req = {0};
  *size = (*size + 4095) & ~4095ull;  // whole pages, as the kernel would round
  req.info.size = *size;
  req.info.domain = NOUVEAU_GEM_DOMAIN_GART;
  if (nouveau_ioctl(fd, DRM_IOCTL_NOUVEAU_GEM_NEW, &req)) return -1;
  *handle = req.info.handle;
  return 0;
}

static int gem_create(int fd, struct drm_i915_gem_create *c) {
  uint64_t size = c->size;
  if (gem_new(fd, &size, &c->handle)) return -1;
  c->size = size;
  return 0;
}

// The extensions (memory regions, PAT index, protection) only steer placement on real hardware.
static int gem_create_ext(int fd, struct drm_i915_gem_create_ext *c) {
  uint64_t size = c->size;
  if (gem_new(fd, &size, &c->handle)) return -1;
  c->size = size;
  return 0;
}

// The nouveau shim's map handle is the offset its mmap() wrapper understands.
static int gem_mmap_offset(int fd, struct drm_i915_gem_mmap_offset *m) {
  struct drm_nouveau_gem_info info = {.handle = m->handle};
  if (nouveau_ioctl(fd, DRM_IOCTL_NOUVEAU_GEM_INFO, &info)) return -1;
  m->offset = info.map_handle;
  return 0;
}

// Tiling is a display matter; report linear, unswizzled buffers.
static int gem_get_tiling(struct drm_i915_gem_get_tiling *t) {
  t->tiling_mode = I915_TILING_NONE;
  t->swizzle_mode = t->phys_swizzle_mode = I915_BIT_6_SWIZZLE_NONE;
  return 0;
}

static int gem_get_aperture(struct drm_i915_gem_get_aperture *a) {
  a->aper_size = a->aper_available_size = 1ull << 48;
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Dispatch

static int i915_ioctl(int fd, unsigned int nr, unsigned long request, void *arg) {
  LOG("ioctl 0x%02x\n", nr);
  switch (nr) {
    case DRM_I915_GETPARAM: return get_param(arg);
    case DRM_I915_QUERY: return query(arg);
    case DRM_I915_GEM_CONTEXT_CREATE:  // also CONTEXT_CREATE_EXT: same number, larger struct
      return context_create(arg, _IOC_SIZE(request) >= sizeof(struct drm_i915_gem_context_create_ext));
    case DRM_I915_GEM_CONTEXT_GETPARAM: return context_get_param(arg);
    case DRM_I915_GEM_VM_CREATE: return vm_create(arg);
    case DRM_I915_GEM_CREATE: return gem_create(fd, arg);
    case DRM_I915_GEM_CREATE_EXT: return gem_create_ext(fd, arg);
    case DRM_I915_GEM_MMAP_GTT: return gem_mmap_offset(fd, arg);  // also GEM_MMAP_OFFSET
    case DRM_I915_GEM_GET_TILING: return gem_get_tiling(arg);
    case DRM_I915_GEM_GET_APERTURE: return gem_get_aperture(arg);
    // Accepted and ignored: settings, and everything that would run or wait for GPU work.
    case DRM_I915_GEM_CONTEXT_DESTROY:
    case DRM_I915_GEM_CONTEXT_SETPARAM:
    case DRM_I915_GEM_VM_DESTROY:
    case DRM_I915_GEM_SET_TILING:
    case DRM_I915_GEM_SET_CACHING:
    case DRM_I915_GEM_GET_CACHING:
    case DRM_I915_GEM_SET_DOMAIN:
    case DRM_I915_GEM_MADVISE:
    case DRM_I915_GEM_BUSY:
    case DRM_I915_GEM_WAIT:
    case DRM_I915_GEM_EXECBUFFER2:  // also EXECBUFFER2_WR
    case DRM_I915_GET_RESET_STATS:  // the caller's zeroed counters mean "no hang"
    case DRM_I915_REG_READ:
      return 0;
    default:
      LOG("ioctl 0x%02x: not supported\n", nr);
      return fail(EINVAL);
  }
}

// Every ioctl of type 'd' (DRM) in this process goes to the one fake render node: the nouveau shim
// hides every real DRM device. The i915 ones and the version are ours; the core ones (GEM_CLOSE,
// GET_CAP, syncobjs) stay with the nouveau shim, which owns the buffers.
int ioctl(int fd, unsigned long request, ...) {
  va_list ap;
  va_start(ap, request);
  void *arg = va_arg(ap, void *);
  va_end(ap);
  init_once();
  if (!next_ioctl) next_ioctl = next_fn("ioctl");
  if (_IOC_TYPE(request) != DRM_IOCTL_BASE) return next_ioctl(fd, request, arg);

  unsigned int nr = _IOC_NR(request);
  if (nr == _IOC_NR(DRM_IOCTL_VERSION)) return drm_version(arg);
  if (nr >= DRM_COMMAND_BASE && nr < DRM_COMMAND_END)
    return i915_ioctl(fd, nr - DRM_COMMAND_BASE, request, arg);
  return next_ioctl(fd, request, arg);
}
