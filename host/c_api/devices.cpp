// C API: device requirements, contexts (created or wrapped) and submit-and-wait.
#include <optional>
#include "c_api.hpp"
#include "vkgmm/requirements.hpp"

using vkgmm::c_api::guarded;
using vkgmm::c_api::tri_state;
using vkgmm::c_api::read_struct;
using vkgmm::c_api::require;

extern "C" {

namespace {

// Both queries: with an instance, the matrix units too.
vkgmm_status query_requirements(VkInstance instance, VkPhysicalDevice physical_device, PFN_vkGetInstanceProcAddr gipa,
                                vkgmm_device_requirements* out) {
  // The extension names are static strings; the array holding them must outlive the call, so it is static.
  static const vkgmm::DeviceRequirements base = vkgmm::device_requirements();
  std::string missing;
  vkgmm_status s = guarded([&] {
    vkgmm_device_requirements answer{};
    answer.min_api_version = base.min_api_version;
    answer.required_extension_count = static_cast<uint32_t>(base.required_extensions.size());
    answer.required_extensions = base.required_extensions.data();
    answer.supported = 1;
    if (physical_device != VK_NULL_HANDLE) {
      const vkgmm::DeviceRequirements r = instance != VK_NULL_HANDLE
                                              ? vkgmm::device_requirements(instance, physical_device, gipa)
                                              : vkgmm::device_requirements(physical_device);
      answer.supported = r.supported ? 1 : 0;
      answer.storage_buffer_16bit = r.storage_buffer_16bit ? 1 : 0;
      answer.matrix_extension = r.matrix_extension;
      for (const std::string& m : r.missing) missing += (missing.empty() ? "" : "; ") + m;
    }
    vkgmm::c_api::write_struct(out, answer, "out", "vkgmm_device_requirements");
  });
  // Documented: an unsupported device is a successful answer, with the reasons as the message.
  if (s == VKGMM_OK && !missing.empty()) vkgmm::c_api::set_error(VKGMM_OK, missing.c_str());
  return s;
}

}  // namespace

vkgmm_status vkgmm_device_requirements_query(VkPhysicalDevice physical_device, vkgmm_device_requirements* out) {
  return query_requirements(VK_NULL_HANDLE, physical_device, nullptr, out);
}

vkgmm_status vkgmm_device_requirements_query_instance(VkInstance instance, VkPhysicalDevice physical_device,
                                                      PFN_vkGetInstanceProcAddr get_instance_proc_addr,
                                                      vkgmm_device_requirements* out) {
  if (instance == VK_NULL_HANDLE)
    return guarded([] { vkgmm::c_api::bad("instance", "is VK_NULL_HANDLE (vkgmm_device_requirements_query takes none)"); });
  return query_requirements(instance, physical_device, get_instance_proc_addr, out);
}

namespace {

// NULL: every default.
vkgmm::ContextOptions context_options(const vkgmm_context_options* options, const char* what) {
  vkgmm::ContextOptions o;
  if (!options) return o;
  const vkgmm_context_options c = read_struct(options, what, "vkgmm_context_options");
  if (c.device) o.device = c.device;
  o.validate = tri_state(c.validate);
  if (const vkgmm::Schedule s = vkgmm::c_api::schedule(what, c.schedule); s != vkgmm::Schedule::automatic)
    o.schedule = s;
  o.storage16 = tri_state(c.storage16);
  o.vec4_loads = tri_state(c.vec4_loads);
  o.texel_loads = tri_state(c.texel_loads);
  if (c.timeout_s != 0) o.timeout_s = c.timeout_s;
  // AUTO leaves the option unset, so $VKGMM_DEVICE_GRID still decides (as schedule's AUTO does).
  if (const vkgmm::DeviceGrid g = vkgmm::c_api::device_grid(what, c.device_grid); g != vkgmm::DeviceGrid::automatic)
    o.device_grid = g;
  if (c.reserved != 0) vkgmm::c_api::bad(what, "reserved must be 0");
  // As above: AUTO and 0 leave $VKGMM_GRID and $VKGMM_PERSISTENT_WORKGROUPS their say.
  if (const vkgmm::Grid g = vkgmm::c_api::grid(what, c.grid); g != vkgmm::Grid::automatic) o.grid = g;
  if (c.persistent_workgroups != 0) o.persistent_workgroups = c.persistent_workgroups;
  o.eager_pipelines = tri_state(c.eager_pipelines);
  if (c.reserved_tail != 0) vkgmm::c_api::bad(what, "reserved_tail must be 0");
  if (c.matrix_extension) o.matrix_extension = c.matrix_extension;
  o.app_workspaces = c.app_workspaces > 0;
  if (c.reserved_end != 0) vkgmm::c_api::bad(what, "reserved_end must be 0");
  return o;
}

}  // namespace

vkgmm_status vkgmm_context_create(const vkgmm_context_options* options, vkgmm_context** out) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    *out = new vkgmm_context{vkgmm::Context(context_options(options, "options"))};
  });
}

vkgmm_status vkgmm_context_wrap(const vkgmm_borrowed_device* device, vkgmm_context** out) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    const vkgmm_borrowed_device c = read_struct(device, "device", "vkgmm_borrowed_device");
    vkgmm::BorrowedDevice d;
    d.instance = c.instance;
    d.physical_device = c.physical_device;
    d.device = c.device;
    d.queue = c.queue;
    d.queue_family = c.queue_family;
    d.storage_buffer_16bit = c.storage_buffer_16bit != 0;
    d.get_instance_proc_addr = c.get_instance_proc_addr;
    d.matrix_units = c.matrix_units != 0;
    if (c.reserved_tail != 0) vkgmm::c_api::bad("device", "reserved_tail must be 0");
    *out = new vkgmm_context{vkgmm::Context::wrap(d, context_options(c.options, "device->options"))};
  });
}

void vkgmm_context_destroy(vkgmm_context* ctx) {
  try {
    delete ctx;
  } catch (...) {
    // A destructor that throws cannot be reported through a void function; the handles are gone anyway.
  }
}

const char* vkgmm_context_device_name(const vkgmm_context* ctx) { return ctx ? ctx->ctx.info().name.c_str() : ""; }

VkDevice vkgmm_context_device(const vkgmm_context* ctx) { return ctx ? ctx->ctx.device() : VK_NULL_HANDLE; }

vkgmm_status vkgmm_context_info(const vkgmm_context* ctx, vkgmm_device_info* out) {
  return guarded([&] {
    require(ctx, "ctx");
    const vkgmm::DeviceInfo& i = ctx->ctx.info();
    vkgmm_device_info c{};
    c.name = i.name.c_str(), c.driver = i.driver.c_str(), c.architecture = i.architecture.c_str();
    c.matrix_extension = i.matrix_extension.c_str();
    c.vendor_id = i.vendor_id, c.device_id = i.device_id, c.subgroup_size = i.subgroup_size;
    c.max_shared_memory = i.max_shared_memory, c.max_storage_buffer_range = i.max_storage_buffer_range;
    c.min_storage_buffer_offset_alignment = i.min_storage_buffer_offset_alignment;
    c.device_local_bytes = i.device_local_bytes, c.compute_units = i.compute_units;
    c.storage_buffer_16bit = i.storage_buffer_16bit, c.timestamps = i.timestamps;
    c.timestamp_period_ns = i.timestamp_period_ns;
    vkgmm::c_api::write_struct(out, c, "out", "vkgmm_device_info");
  });
}

uint64_t vkgmm_context_max_whole_input_bytes(const vkgmm_context* ctx, vkgmm_dtype type) {
  const int t = static_cast<int>(type);
  if (!ctx || t < 0 || !vkgmm::is_known(static_cast<vkgmm::DType>(t))) return 0;
  return ctx->ctx.max_whole_input_bytes(static_cast<vkgmm::DType>(t));
}

vkgmm_status vkgmm_submit_and_wait(vkgmm_context* ctx, vkgmm_record_fn record, void* user) {
  return guarded([&] {
    require(ctx, "ctx");
    require(reinterpret_cast<const void*>(record), "record");
    ctx->ctx.submit_and_wait([&](VkCommandBuffer cb) {
      const vkgmm_status s = record(cb, user);
      if (s == VKGMM_OK) return;
      // Keep the message of the vkgmm call that failed inside the callback, if there was one.
      std::string why = vkgmm_last_error_message();
      if (why.empty()) why = std::string("the record callback returned ") + vkgmm_status_string(s);
      throw vkgmm::Error(vkgmm::c_api::from_c(s), why);
    });
  });
}

}  // extern "C"
