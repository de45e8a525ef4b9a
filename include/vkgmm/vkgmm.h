/* vkgmm C API: grouped matmul (gmm, tgmm, gmm backward) on Vulkan, for C, FFI and engines built
 * without exceptions. It is a thin layer over the C++ API (vkgmm/vkgmm.hpp): same checks, same kernels.
 * What each operation computes, takes and refuses: docs/contract.md.
 *
 * Conventions
 * - Every function that can fail returns a vkgmm_status; VKGMM_OK is 0. On failure nothing was created
 *   or recorded, and vkgmm_last_error_message() names the argument and the rule that failed.
 * - Handles are opaque; each *_create / *_wrap has a *_destroy that accepts NULL.
 * - Structs are zero-initialisable and zero means "the default" for every field except the sizes that
 *   describe the problem (m, k, n, group sizes) and struct_size, below.
 * - Growing structs: every struct a caller passes in or gets filled (options, devices, problems,
 *   operands, requirements, sizes) starts with `size_t struct_size`, which the caller sets to
 *   sizeof(the struct) as its vkgmm.h declares it:
 *       vkgmm_gmm_problem p;  memset(&p, 0, sizeof p);  p.struct_size = sizeof p;
 *   Later versions only append fields, whose zero keeps the old behaviour, so both sides stay compatible:
 *   - a caller built against an older vkgmm.h passes a smaller struct_size: vkgmm reads the fields it has
 *     and takes the defaults for the rest;
 *   - a caller built against a newer vkgmm.h passes a larger struct_size: vkgmm accepts it when every
 *     field it does not know is zero (its default), and refuses it with VKGMM_UNSUPPORTED otherwise;
 *   - vkgmm fills a struct it returns up to the caller's struct_size (zero past the fields it knows);
 *   - struct_size 0, or smaller than the struct's first published size, is VKGMM_INVALID_ARGUMENT.
 *   The small value types embedded in them (vkgmm_buffer_view, vkgmm_tiling) are fixed and have none.
 * - A plan and every buffer keep their device alive: they may be destroyed after the context.
 */
#ifndef VKGMM_H_
#define VKGMM_H_

#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#include "vkgmm/export.h"
#include "vkgmm/vocabulary.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vkgmm_status {
  VKGMM_OK = 0,
  VKGMM_INVALID_ARGUMENT = 1, /* the input breaks a rule of docs/contract.md */
  VKGMM_UNSUPPORTED = 2,      /* valid input the device or build cannot run */
  VKGMM_OUT_OF_MEMORY = 3,    /* host or device allocation failed */
  VKGMM_DEVICE_LOST = 4,      /* VK_ERROR_DEVICE_LOST or a wait that timed out */
  VKGMM_VULKAN_ERROR = 5,     /* any other failing VkResult */
  VKGMM_VALIDATION = 6,       /* the validation layer reported a message (validation on) */
  VKGMM_INTERNAL = 7
} vkgmm_status;

/* A static name for a status ("VKGMM_INVALID_ARGUMENT"); "VKGMM_UNKNOWN_STATUS" for other values. */
VKGMM_API const char* vkgmm_status_string(vkgmm_status status);
/* The message of the last call on this thread that returned a vkgmm_status: why it failed, "" when it
 * succeeded (except vkgmm_device_requirements_query, which leaves what an unsupported device lacks). The
 * calls that return no status (the destroys, vkgmm_buffer_whole, the context's getters) leave it as it
 * was. Valid until the next vkgmm call on this thread. */
VKGMM_API const char* vkgmm_last_error_message(void);
/* The library's version, "major.minor.patch". */
VKGMM_API const char* vkgmm_version_string(void);

/* Element types, then GGUF's block formats (gmm's rhs only: expert weights [E_local, n, k] as GGUF stores
 * them, blocks of values along k, byte for byte ggml's block_* structs; docs/quantized-weights.md). The values match
 * the C++ vkgmm::DType. */
/* VKGMM_F32, VKGMM_F16, VKGMM_BF16, then the block formats from VKGMM_Q8_0 on: listed with their
 * block sizes in vkgmm/vocabulary.h (VKGMM_DTYPES); new ones are appended. */
#define VKGMM_C_DTYPE_(name, NAME, value, values, bytes, ggml) VKGMM_##NAME = value,
typedef enum vkgmm_dtype { VKGMM_DTYPES(VKGMM_C_DTYPE_) } vkgmm_dtype;
#undef VKGMM_C_DTYPE_

/* The kernel choices a context or a problem may force: VKGMM_SCHEDULE_AUTO, _SHARED, _DIRECT, _MATRIX
 * (vkgmm::Schedule); gmm's grid with device group sizes, VKGMM_DEVICE_GRID_AUTO, _INDIRECT, _UPPER_BOUND
 * (vkgmm::DeviceGrid); how an op's workgroups take its work items, VKGMM_GRID_AUTO, _PER_VISIT,
 * _PERSISTENT (vkgmm::Grid). Listed, with what each does, in vkgmm/vocabulary.h; the values match the C++
 * enums. */
#define VKGMM_C_SCHEDULE_(name, NAME, value) VKGMM_SCHEDULE_##NAME = value,
typedef enum vkgmm_schedule { VKGMM_SCHEDULES(VKGMM_C_SCHEDULE_) } vkgmm_schedule;
#undef VKGMM_C_SCHEDULE_
#define VKGMM_C_DEVICE_GRID_(name, NAME, value) VKGMM_DEVICE_GRID_##NAME = value,
typedef enum vkgmm_device_grid { VKGMM_DEVICE_GRIDS(VKGMM_C_DEVICE_GRID_) } vkgmm_device_grid;
#undef VKGMM_C_DEVICE_GRID_
#define VKGMM_C_GRID_(name, NAME, value) VKGMM_GRID_##NAME = value,
typedef enum vkgmm_grid { VKGMM_GRIDS(VKGMM_C_GRID_) } vkgmm_grid;
#undef VKGMM_C_GRID_

typedef struct vkgmm_context vkgmm_context;
typedef struct vkgmm_buffer vkgmm_buffer;
typedef struct vkgmm_gmm_plan vkgmm_gmm_plan;
typedef struct vkgmm_tgmm_plan vkgmm_tgmm_plan;
typedef struct vkgmm_gmm_backward_plan vkgmm_gmm_backward_plan;

/* ----- devices ------------------------------------------------------------------------------------ */

/* What vkgmm needs from a device the app creates (see vkgmm/requirements.hpp). */
typedef struct vkgmm_device_requirements {
  size_t struct_size;                      /* set by the caller; vkgmm fills the rest */
  uint32_t min_api_version;                /* VK_API_VERSION_1_2 */
  uint32_t required_extension_count;
  const char* const* required_extensions;  /* static strings, ready for ppEnabledExtensionNames */
  int supported;            /* the physical device has everything required (1 when none was given) */
  int storage_buffer_16bit; /* the device offers storageBuffer16BitAccess (optional: enable it if you like) */
  /* vkgmm_device_requirements_query_instance only (else NULL): the cooperative-matrix extension vkgmm's
   * matrix schedule would use, a static string, or NULL where it can use none; what to enable with it:
   * DeviceRequirements::matrix_extension in requirements.hpp. Then set vkgmm_borrowed_device.matrix_units. */
  const char* matrix_extension;
} vkgmm_device_requirements;

/* physical_device may be VK_NULL_HANDLE: the requirements alone. Otherwise, when the device lacks
 * something required, out->supported = 0 and vkgmm_last_error_message() says what (the call still
 * returns VKGMM_OK). */
VKGMM_API vkgmm_status vkgmm_device_requirements_query(VkPhysicalDevice physical_device, vkgmm_device_requirements* out);
/* The same, and matrix_extension, which takes the device's instance to query; get_instance_proc_addr: the
 * app's (as in vkgmm_borrowed_device), or NULL for the loader vkgmm links. */
VKGMM_API vkgmm_status vkgmm_device_requirements_query_instance(VkInstance instance, VkPhysicalDevice physical_device,
                                                                PFN_vkGetInstanceProcAddr get_instance_proc_addr,
                                                                vkgmm_device_requirements* out);

/* How a context runs (vkgmm::ContextOptions): read once when it is made. 0 in a field means "the
 * default", which the environment variable named beside it gives where set. */
typedef struct vkgmm_context_options {
  size_t struct_size;
  const char* device; /* index or name substring; NULL or "": $VKGMM_DEVICE, else the best device */
  int validate;       /* 0: $VKGMM_VALIDATE decides; 1: on; -1: off */
  /* SHARED, DIRECT or MATRIX: every plan on the context uses that schedule (MATRIX where it can). AUTO (0): $VKGMM_SCHEDULE
   * (shared|direct|matrix) decides, else each problem's own. */
  vkgmm_schedule schedule;
  int storage16;   /* 16-bit storage where the device has it. 0: on unless $VKGMM_DISABLE_16BIT_STORAGE=1; 1 on; -1 off */
  int vec4_loads;  /* 4-element loads of the direct schedule. 0: on unless $VKGMM_DISABLE_VEC4=1; 1 on; -1 off */
  int texel_loads; /* inputs through texel views on CPU devices. 0: on unless $VKGMM_DISABLE_TEXEL=1; 1; -1 */
  double timeout_s; /* bound on every wait. 0: $VKGMM_TIMEOUT_S, else 600; negative: refused */
  /* INDIRECT or UPPER_BOUND: gmm's grid with device group sizes. AUTO (0): $VKGMM_DEVICE_GRID
   * (indirect|upper_bound) decides, else the faster. INDIRECT needs a workspace that is an indirect
   * buffer (vkgmm's own, or lent with vkgmm_buffer_borrow_usage): else that record takes UPPER_BOUND. */
  vkgmm_device_grid device_grid;
  int32_t reserved; /* must be 0: no struct ends in padding */
  /* PER_VISIT or PERSISTENT: every plan on the context takes that grid. AUTO (0): $VKGMM_GRID
   * (per_visit|persistent) decides, else the faster where measured. */
  vkgmm_grid grid;
  /* The persistent grid's workgroups. 0: $VKGMM_PERSISTENT_WORKGROUPS, else one per compute unit. */
  uint32_t persistent_workgroups;
  /* Compile every pipeline a plan's record can bind when the plan is made (record never compiles).
   * 0: $VKGMM_EAGER_PIPELINES (1|0), else on for GPUs and off on CPU devices; 1 on; -1 off */
  int eager_pipelines;
  int32_t reserved_tail; /* must be 0 */
  /* The cooperative-matrix extension of the matrix schedule: "VK_KHR_cooperative_matrix" or
   * "VK_NV_cooperative_matrix" (any other: VKGMM_INVALID_ARGUMENT). NULL or "": $VKGMM_MATRIX_EXTENSION,
   * else KHR where vkgmm has its build, else NV. */
  const char* matrix_extension;
  /* 1: plans made on the context allocate no workspace of their own; every record of a plan with a workspace
   * (workspace_bytes > 0) gives one, else it is VKGMM_INVALID_ARGUMENT naming the workspace. 0 or -1: each
   * such plan also allocates its own, for the records that give none. */
  int app_workspaces;
  int32_t reserved_end; /* must be 0 */
} vkgmm_context_options;

/* An app's device; vkgmm destroys none of these handles. */
typedef struct vkgmm_borrowed_device {
  size_t struct_size;
  VkInstance instance;
  VkPhysicalDevice physical_device;
  VkDevice device;
  VkQueue queue;         /* may be VK_NULL_HANDLE when the app only records (no *_run, no submit) */
  uint32_t queue_family; /* of queue, and of the command buffers vkgmm is recorded into */
  int storage_buffer_16bit; /* the app enabled storageBuffer16BitAccess */
  PFN_vkGetInstanceProcAddr get_instance_proc_addr; /* optional, see BorrowedDevice in context.hpp */
  /* Optional (NULL: defaults): the context's options; device, validate and matrix_extension do not apply here. */
  const vkgmm_context_options* options;
  int matrix_units; /* the app enabled the matrix units: see BorrowedDevice::matrix_units in context.hpp */
  int32_t reserved_tail; /* must be 0 */
} vkgmm_borrowed_device;

/* options may be NULL (all defaults). */
VKGMM_API vkgmm_status vkgmm_context_create(const vkgmm_context_options* options, vkgmm_context** out);
VKGMM_API vkgmm_status vkgmm_context_wrap(const vkgmm_borrowed_device* device, vkgmm_context** out);
VKGMM_API void vkgmm_context_destroy(vkgmm_context* ctx);
/* The device's name (valid while ctx lives). */
VKGMM_API const char* vkgmm_context_device_name(const vkgmm_context* ctx);
VKGMM_API VkDevice vkgmm_context_device(const vkgmm_context* ctx);
/* Context::max_whole_input_bytes: the most bytes of an input of `type` one call reads whole (not bound in
 * parts); 0 for a NULL ctx or an unknown type. */
VKGMM_API uint64_t vkgmm_context_max_whole_input_bytes(const vkgmm_context* ctx, vkgmm_dtype type);

/* Context::info() (vkgmm::DeviceInfo in context.hpp says what each field holds): what an app placing
 * operands in its own buffers needs (a workspace's offset is a multiple of
 * min_storage_buffer_offset_alignment; without storage_buffer_16bit, 16-bit data is read in whole words)
 * and what vkgmm tunes by. The strings live while ctx does; matrix_extension is "" where gmm runs on no
 * matrix units. */
typedef struct vkgmm_device_info {
  size_t struct_size; /* set by the caller; vkgmm fills the rest */
  const char* name;
  const char* driver;
  const char* architecture; /* the device class vkgmm tunes for: "nvidia-ampere", "amd-rdna3", "cpu", ... */
  const char* matrix_extension;
  uint32_t vendor_id, device_id;
  uint32_t subgroup_size;
  uint32_t max_shared_memory;
  uint64_t max_storage_buffer_range;
  uint64_t min_storage_buffer_offset_alignment;
  uint64_t device_local_bytes;
  uint32_t compute_units;
  int32_t storage_buffer_16bit;
  int32_t timestamps;
  float timestamp_period_ns;
} vkgmm_device_info;
VKGMM_API vkgmm_status vkgmm_context_info(const vkgmm_context* ctx, vkgmm_device_info* out);

/* Record with `record` into a one-time command buffer, submit it and wait. A non-OK status from
 * `record` abandons the command buffer unsubmitted and is returned. */
typedef vkgmm_status (*vkgmm_record_fn)(VkCommandBuffer cmd, void* user);
VKGMM_API vkgmm_status vkgmm_submit_and_wait(vkgmm_context* ctx, vkgmm_record_fn record, void* user);

/* ----- buffers and views -------------------------------------------------------------------------- */

/* A range of any VkBuffer with VK_BUFFER_USAGE_STORAGE_BUFFER_BIT; offsets need only be element-aligned. */
typedef struct vkgmm_buffer_view {
  VkBuffer buffer;
  VkDeviceSize offset;
  VkDeviceSize size;
} vkgmm_buffer_view;

/* A storage buffer on the context's device, mapped or staged as vkgmm::Buffer (vkgmm/context.hpp). */
VKGMM_API vkgmm_status vkgmm_buffer_create(vkgmm_context* ctx, VkDeviceSize bytes, vkgmm_buffer** out);
/* The app's own VkBuffer of `bytes`, known to vkgmm until vkgmm_buffer_destroy (Context::borrow_buffer):
 * views of it are checked exactly and, on CPU devices, read through texel views (the fast path). The app
 * keeps the VkBuffer alive until then and until the work recorded with it completed; destroying the
 * handle destroys only vkgmm's views. texel_usage: the buffer has VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT
 * (nonzero) or not (0: storage-buffer loads). No host mapping: upload / download fail. */
VKGMM_API vkgmm_status vkgmm_buffer_borrow(vkgmm_context* ctx, VkBuffer buffer, VkDeviceSize bytes, int texel_usage,
                                           vkgmm_buffer** out);
/* vkgmm_buffer_borrow with the usage flags the app created the VkBuffer with: texel views where it has
 * VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT, and a workspace in it can take the indirect grid where it has
 * VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT (vkgmm_buffer_borrow lends it without: the upper-bound grid). */
VKGMM_API vkgmm_status vkgmm_buffer_borrow_usage(vkgmm_context* ctx, VkBuffer buffer, VkDeviceSize bytes,
                                                 VkBufferUsageFlags usage, vkgmm_buffer** out);
VKGMM_API void vkgmm_buffer_destroy(vkgmm_buffer* buffer);
VKGMM_API vkgmm_status vkgmm_buffer_upload(vkgmm_buffer* buffer, const void* data, size_t bytes, size_t offset);
VKGMM_API vkgmm_status vkgmm_buffer_download(const vkgmm_buffer* buffer, void* data, size_t bytes, size_t offset);
/* The whole buffer as a view (a zero view for NULL). */
VKGMM_API vkgmm_buffer_view vkgmm_buffer_whole(const vkgmm_buffer* buffer);

/* ----- problems ----------------------------------------------------------------------------------- */

/* The activation of gmm's epilogue: VKGMM_ACTIVATION_NONE, _SWIGLU, _SWIGLU_OAI, _GEGLU, listed with
 * their math in vkgmm/vocabulary.h (VKGMM_ACTIVATIONS); the values match the C++ vkgmm::Activation. */
#define VKGMM_C_ACTIVATION_(name, NAME, value, gated) VKGMM_ACTIVATION_##NAME = value,
typedef enum vkgmm_activation { VKGMM_ACTIVATIONS(VKGMM_C_ACTIVATION_) } vkgmm_activation;
#undef VKGMM_C_ACTIVATION_

typedef struct vkgmm_tiling {
  int64_t tm, tk, tn; /* all 0: automatic */
} vkgmm_tiling;

/* A tiling lookup (m, k, n) -> tiling: return nonzero and fill *out, or 0 for "none" (an error). Called
 * only while a plan is created. */
typedef int (*vkgmm_tiling_fn)(int64_t m, int64_t k, int64_t n, vkgmm_tiling* out, void* user);

/* out[m, n]: rows of active group g = lhs[rows] @ rhs[g - group_offset]; other rows = existing_out or 0. */
typedef struct vkgmm_gmm_problem {
  size_t struct_size;
  int64_t m, k, n;
  const int32_t* group_sizes; /* all G groups (copied at plan creation); NULL with device_group_count */
  int64_t num_groups;         /* G; 0 with device_group_count */
  int64_t num_rhs_groups;     /* G_local; 0: G - group_offset */
  int64_t group_offset;
  int transpose_rhs;          /* rhs is [G_local, n, k] */
  vkgmm_dtype lhs_type, rhs_type, out_type;
  int existing_out;
  vkgmm_tiling tiling;            /* used when tiling_fn is NULL */
  vkgmm_tiling_fn tiling_fn;
  void* tiling_user;
  vkgmm_schedule schedule;
  int32_t reserved; /* must be 0: no struct ends in padding, so a field added later starts past the old size */
  /* Group sizes on the device (vkgmm::DeviceGroupSizes): G, with group_sizes NULL and num_groups 0; the
   * int32 [G] sizes are the operands' group_sizes view, written by the app's commands before record()'s.
   * 0: the sizes are the host's group_sizes (the default). */
  int64_t device_group_count;
  int64_t expected_group_rows; /* the automatic tiling's guess of one group's rows; 0: m spread over G at random */
  /* Routing by expert ids (vkgmm::Routing; docs/contract.md, "Routing by expert ids"): top_k > 0 routes the rows
   * by the operands' ids [T, top_k] (int32, on the device; an expert index or -1) instead of group sizes:
   * m is T (tokens), group_sizes NULL, num_groups 0, device_group_count 0, and num_rhs_groups is E_local, the
   * experts rhs holds: [group_offset, group_offset + E_local); 0 there: num_experts - group_offset (then
   * num_experts is required), -1: none (a shard with no local expert). top_k 0: no routing (the default).
   * The output is [T, top_k, n_out] per slot, or [T, n_out] with combine. */
  int64_t top_k;
  int lhs_per_slot;    /* lhs is [T, top_k, k] (one row per slot); 0: [T, k] (a token's row for all its slots) */
  int combine;         /* the operands' weights [T, top_k] f32 combine the slots: out [T, n_out] in token order */
  int64_t num_experts; /* E, when known: ids >= E are counted in the status word (VKGMM_DEVICE_STATUS_BAD_ID); 0: unknown */
  /* The epilogue fused into the store (vkgmm::Epilogue; docs/contract.md, "Epilogues"), with group sizes or ids:
   * product (+ bias) -> activation -> routing weight -> sum over slots -> + existing_out, in fp32. */
  int bias;                    /* the operands' bias [G_local, n] f32 is added to each product row of its group */
  vkgmm_activation activation; /* gated (not NONE): n (the product's width) even, out has n_out = n / 2 columns */
  /* Routed: the kernel also keeps each slot's pre-activation (product + bias, f32 [T, top_k, n]) in the
   * workspace (vkgmm_gmm_plan_saved_pre_activation), the backward's pre_activation. */
  int save_pre_activation;
  int32_t reserved_tail; /* must be 0 */
} vkgmm_gmm_problem;

/* out[j, k, n] = lhs[:, rows(group_offset + j)] @ rhs[rows(group_offset + j), :] (+ existing_out[j]). */
typedef struct vkgmm_tgmm_problem {
  size_t struct_size;
  int64_t m, k, n;
  const int32_t* group_sizes;
  int64_t num_groups;
  int64_t group_offset;
  int64_t num_actual_groups; /* 0: G - group_offset */
  int lhs_mk;                /* lhs is stored [m, k] */
  int out_nk;                /* each output group is stored [n, k] */
  vkgmm_dtype lhs_type, rhs_type, out_type;
  int existing_out;
  vkgmm_tiling tiling;
  vkgmm_tiling_fn tiling_fn;
  void* tiling_user;
  vkgmm_schedule schedule;
  int32_t reserved; /* must be 0 (as vkgmm_gmm_problem's) */
  int64_t device_group_count;  /* as vkgmm_gmm_problem's */
  int64_t expected_group_rows; /* as vkgmm_gmm_problem's */
} vkgmm_tgmm_problem;

/* Bits of the status word a device-sizes or routed record() writes (vkgmm::device_status): 0 when the
 * sizes and ids keep the contract. Sizes that break it are taken as the C++ DeviceGroupSizes says (a negative size as 0,
 * group offsets clamped at m); nothing is read or written outside the views either way. */
typedef enum vkgmm_device_status_bits {
  VKGMM_DEVICE_STATUS_NEGATIVE_SIZE = 1, /* some size was negative (taken as 0) */
  VKGMM_DEVICE_STATUS_SUM_ABOVE_M = 2,   /* the sizes add up to more than m (offsets clamped at m) */
  VKGMM_DEVICE_STATUS_VISITS_CUT = 4,    /* internal: more visits than the plan's bound (never expected) */
  VKGMM_DEVICE_STATUS_BAD_ID = 8,        /* routing: an id below -1, or >= num_experts (skipped) */
  VKGMM_DEVICE_STATUS_BAD_ROUTING = 16   /* a routing shared between passes (the MoE layer's, in its workspace) held a
                                            row-map entry past the slots: rewritten between them; results undefined */
} vkgmm_device_status_bits;

/* Bytes each view must cover at least (exactly the elements; see OperandSizes in ops.hpp), and the device memory
 * the plan itself holds for its group metadata. */
typedef struct vkgmm_operand_sizes {
  size_t struct_size; /* set by the caller; vkgmm fills the rest */
  VkDeviceSize lhs, rhs, out, existing_out, metadata;
  /* With device group sizes, routing by ids (0 where the plan reads them in its kernel), or a tgmm plan
   * that splits a long group's reduction: the bytes of the workspace view (GmmPlan::workspace_bytes(),
   * TgmmPlan::workspace_bytes()); else 0. */
  VkDeviceSize workspace;
} vkgmm_operand_sizes;

/* existing_out.buffer = VK_NULL_HANDLE when the problem has none; it may be the same range as out.
 * With device group sizes (device_group_count > 0), as GmmOperands' in ops.hpp:
 * - group_sizes: the int32 [G] sizes (4-byte aligned), written before record()'s commands run (your
 *   barrier: the writer's stage and access -> COMPUTE_SHADER + SHADER_READ);
 * - workspace: optional, at least vkgmm_operand_sizes.workspace bytes at an offset that is a multiple of
 *   minStorageBufferOffsetAlignment (a zero view: the plan's own, so that executions of the plan that
 *   overlap in time race; VKGMM_INVALID_ARGUMENT on a context with app_workspaces);
 * - status: optional, one uint32 word the metadata build overwrites with vkgmm_device_status_bits (a
 *   zero view: none).
 * All three stay zero views on the host path.
 * With routing (top_k > 0): ids, the int32 [T, top_k] expert ids (4-byte aligned), written before
 * record()'s commands run (as device group sizes); weights, f32 [T, top_k], with combine (a zero view
 * otherwise); workspace and status as with device group sizes (the status bits include
 * VKGMM_DEVICE_STATUS_BAD_ID); group_sizes stays a zero view.
 * bias: f32 [G_local, n] with the problem's bias (a zero view otherwise). */
typedef struct vkgmm_gmm_operands {
  size_t struct_size;
  vkgmm_buffer_view lhs, rhs, out, existing_out;
  vkgmm_buffer_view group_sizes, workspace, status;
  vkgmm_buffer_view ids, weights, bias;
} vkgmm_gmm_operands;
typedef struct vkgmm_tgmm_operands {
  size_t struct_size;
  vkgmm_buffer_view lhs, rhs, out, existing_out;
  /* As vkgmm_gmm_operands'; workspace also where vkgmm_operand_sizes.workspace > 0 with the sizes on the host. */
  vkgmm_buffer_view group_sizes, workspace, status;
} vkgmm_tgmm_operands;
typedef struct vkgmm_gmm_backward_operands {
  size_t struct_size;
  vkgmm_buffer_view lhs, rhs, d_out, d_lhs, d_rhs;
  /* As vkgmm_gmm_operands'; the workspace is vkgmm_gmm_backward_sizes.workspace bytes (all passes'). */
  vkgmm_buffer_view group_sizes, workspace, status;
  /* A routed forward's ids and weights, an epilogue's bias (the forward's views), and the gradients
   * they add: d_bias f32 [G_local, n], d_weights f32 [T, top_k] (zero views: not computed). */
  vkgmm_buffer_view ids, weights, bias, d_bias, d_weights;
  /* Routed: the forward's saved pre-activation (vkgmm_gmm_plan_saved_pre_activation); a zero view: the
   * backward recomputes it (the same bits, one more matmul). */
  vkgmm_buffer_view pre_activation;
} vkgmm_gmm_backward_operands;
typedef struct vkgmm_gmm_backward_sizes {
  size_t struct_size; /* set by the caller; vkgmm fills the rest */
  VkDeviceSize lhs, rhs, d_out, d_lhs, d_rhs, metadata;
  VkDeviceSize workspace; /* as vkgmm_operand_sizes' (GmmBackwardPlan::workspace_bytes()) */
  VkDeviceSize ids, weights, bias, d_bias, d_weights; /* 0: the forward has none */
  VkDeviceSize pre_activation; /* routed: T * top_k * n * 4; 0: not routed */
} vkgmm_gmm_backward_sizes;
/* vkgmm::GmmBackwardOptions: accumulate nonzero assembles the shards of the experts in place (rows of no
 * active group keep what d_lhs holds; a routed token-level d_lhs and d_weights add to it). */
typedef struct vkgmm_gmm_backward_options {
  size_t struct_size;
  int32_t accumulate;
  int32_t reserved_tail; /* must be 0 */
} vkgmm_gmm_backward_options;

/* ----- plans: validate + metadata once; record any number of times; never submit -------------------- */
/* record() writes dispatches into cmd (recording, of the context's queue family) and submits nothing;
 * the barriers around it are the app's (docs/embedding.md). With device group sizes it
 * records the metadata build (a dispatch of its own), a compute -> compute barrier (also -> the indirect
 * command read on the indirect grid, vkgmm_device_grid), then the op. A plan
 * must outlive the execution of every command buffer it was recorded into. *_run = record + submit + wait. */

VKGMM_API vkgmm_status vkgmm_gmm_plan_create(vkgmm_context* ctx, const vkgmm_gmm_problem* problem, vkgmm_gmm_plan** out);
VKGMM_API void vkgmm_gmm_plan_destroy(vkgmm_gmm_plan* plan);
VKGMM_API vkgmm_status vkgmm_gmm_plan_sizes(const vkgmm_gmm_plan* plan, vkgmm_operand_sizes* out);
VKGMM_API vkgmm_status vkgmm_gmm_plan_tiling(const vkgmm_gmm_plan* plan, vkgmm_tiling* out);
/* The schedule the op's kernel runs, the automatic choice resolved (never AUTO): vkgmm::GmmPlan::schedule. */
VKGMM_API vkgmm_status vkgmm_gmm_plan_schedule(const vkgmm_gmm_plan* plan, vkgmm_schedule* out);
VKGMM_API vkgmm_status vkgmm_gmm_plan_record(const vkgmm_gmm_plan* plan, VkCommandBuffer cmd, const vkgmm_gmm_operands* ops);
VKGMM_API vkgmm_status vkgmm_gmm_plan_run(vkgmm_context* ctx, const vkgmm_gmm_plan* plan, const vkgmm_gmm_operands* ops);
/* With save_pre_activation: where record() leaves the pre-activation in `workspace` (the operands'
 * workspace; a zero view: the plan's own, VKGMM_INVALID_ARGUMENT on a context with app_workspaces), into
 * *out. */
VKGMM_API vkgmm_status vkgmm_gmm_plan_saved_pre_activation(const vkgmm_gmm_plan* plan, vkgmm_buffer_view workspace,
                                                           vkgmm_buffer_view* out);

VKGMM_API vkgmm_status vkgmm_tgmm_plan_create(vkgmm_context* ctx, const vkgmm_tgmm_problem* problem, vkgmm_tgmm_plan** out);
VKGMM_API void vkgmm_tgmm_plan_destroy(vkgmm_tgmm_plan* plan);
VKGMM_API vkgmm_status vkgmm_tgmm_plan_sizes(const vkgmm_tgmm_plan* plan, vkgmm_operand_sizes* out);
VKGMM_API vkgmm_status vkgmm_tgmm_plan_tiling(const vkgmm_tgmm_plan* plan, vkgmm_tiling* out);
VKGMM_API vkgmm_status vkgmm_tgmm_plan_schedule(const vkgmm_tgmm_plan* plan, vkgmm_schedule* out);
VKGMM_API vkgmm_status vkgmm_tgmm_plan_record(const vkgmm_tgmm_plan* plan, VkCommandBuffer cmd, const vkgmm_tgmm_operands* ops);
VKGMM_API vkgmm_status vkgmm_tgmm_plan_run(vkgmm_context* ctx, const vkgmm_tgmm_plan* plan, const vkgmm_tgmm_operands* ops);

/* The gradients of out = gmm(lhs, rhs, ...) (the forward problem): d_lhs [m, k] and d_rhs [G_local, k, n]
 * ([G_local, n, k] with transpose_rhs); two independent dispatches (d_lhs's gmm may take one per tile
 * height on a GPU, side by side). A forward routed by expert ids or
 * with an epilogue adds d_bias and d_weights, in passes with their barriers (vkgmm::GmmBackwardOperands).
 * options may be NULL (the defaults). */
VKGMM_API vkgmm_status vkgmm_gmm_backward_plan_create(vkgmm_context* ctx, const vkgmm_gmm_problem* forward,
                                                      vkgmm_gmm_backward_plan** out);
VKGMM_API vkgmm_status vkgmm_gmm_backward_plan_create_with_options(vkgmm_context* ctx, const vkgmm_gmm_problem* forward,
                                                                   const vkgmm_gmm_backward_options* options,
                                                                   vkgmm_gmm_backward_plan** out);
VKGMM_API void vkgmm_gmm_backward_plan_destroy(vkgmm_gmm_backward_plan* plan);
VKGMM_API vkgmm_status vkgmm_gmm_backward_plan_sizes(const vkgmm_gmm_backward_plan* plan, vkgmm_gmm_backward_sizes* out);
VKGMM_API vkgmm_status vkgmm_gmm_backward_plan_record(const vkgmm_gmm_backward_plan* plan, VkCommandBuffer cmd,
                                                      const vkgmm_gmm_backward_operands* ops);
VKGMM_API vkgmm_status vkgmm_gmm_backward_plan_run(vkgmm_context* ctx, const vkgmm_gmm_backward_plan* plan,
                                                   const vkgmm_gmm_backward_operands* ops);

#ifdef __cplusplus
}
#endif

#include "vkgmm/vkgmm_top_k.h"
#include "vkgmm/vkgmm_moe.h"

#endif /* VKGMM_H_ */
