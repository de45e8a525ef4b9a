// `vkgmm info [--json]`: what the chosen device is and offers. Creating a Context is the whole test:
// it picks the device the way `vkgmm run` does ($VKGMM_DEVICE, else the preference order), so what is
// printed is what a run would get.
#include "info.hpp"

#include "fail.hpp"
#include "flags.hpp"
#include "json.hpp"

#include <cstdio>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "cache_size.hpp"
#include "vkgmm/context.hpp"
#include "probe.hpp"
#include "vkgmm/types.hpp"

namespace {

const char kUsage[] =
    "usage: vkgmm info [--json]\n"
    "\n"
    "Prints the device vkgmm runs on (chosen by $VKGMM_DEVICE, an index or a name substring, else the\n"
    "first discrete, integrated, virtual or CPU device), its limits and the features vkgmm uses, then\n"
    "measures its fp32 FMA ceiling, streaming read bandwidth and buffer copy bandwidth (each memory probe\n"
    "reads 8x the last-level cache per run, at least 1 GiB on GPUs; $VKGMM_CACHE_BYTES, a byte count\n"
    "from 1 to 4 GiB, overrides the cache size). rhs_formats lists the types gmm's weights\n"
    "may have: f32, f16, bf16 and GGUF's block formats (vkgmm quantize makes them from .npy).\n"
    "--json prints the same as one JSON object.\n";

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

std::string api_version(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

using tool::fail;
using tool::json_string;

// The types gmm's rhs may have: the element types, then GGUF's block formats (docs/contract.md, "Quantized
// expert weights"), by the names --rhs-format and vkgmm quantize take.
#define VKGMM_INFO_DTYPE_(name, NAME, value, values, bytes, ggml) vkgmm::DType::name,
constexpr vkgmm::DType kRhsFormats[] = {VKGMM_DTYPES(VKGMM_INFO_DTYPE_)};
#undef VKGMM_INFO_DTYPE_

std::string formats_text() {
  std::string s;
  for (vkgmm::DType t : kRhsFormats) {
    if (!s.empty()) s += ' ';
    s += vkgmm::dtype_name(t);
  }
  return s;
}

std::string formats_json() {
  std::string s = "[";
  for (vkgmm::DType t : kRhsFormats) {
    if (s.size() > 1) s += ", ";
    s += json_string(vkgmm::dtype_name(t));
  }
  return s + "]";
}

// The matrix units gmm's matrix schedule runs on, and every cooperative-matrix shape the device lists.
std::string matrix_text(const vkgmm::DeviceInfo& d) {
  if (d.matrix_extension.empty()) return "none (gmm runs its FMA schedules; the shapes below say what the device has)";
  return d.matrix_extension + ", " + std::to_string(d.matrix_m) + "x" + std::to_string(d.matrix_n) + "x" +
         std::to_string(d.matrix_k) + " f16*f16+f32 in subgroups of " + std::to_string(d.matrix_subgroup_size) +
         " (gmm's matrix schedule: f16 lhs, f16 or block-format rhs" +
         (d.matrix_automatic ? ")" : "; only when asked for: results seen wrong on this driver, docs/gpu-results.md)");
}
std::string matrix_json(const vkgmm::DeviceInfo& d) {
  if (d.matrix_extension.empty()) return "null";
  return "{\"extension\": " + json_string(d.matrix_extension) + ", \"m\": " + std::to_string(d.matrix_m) +
         ", \"n\": " + std::to_string(d.matrix_n) + ", \"k\": " + std::to_string(d.matrix_k) +
         ", \"subgroup_size\": " + std::to_string(d.matrix_subgroup_size) +
         ", \"automatic\": " + (d.matrix_automatic ? "true" : "false") + "}";
}
std::string shapes_text(const vkgmm::DeviceInfo& d) {
  std::string s;
  for (const std::string& shape : d.matrix_shapes) s += (s.empty() ? "" : "; ") + shape;
  return s.empty() ? "none" : s;
}
std::string shapes_json(const vkgmm::DeviceInfo& d) {
  std::string s = "[";
  for (const std::string& shape : d.matrix_shapes) s += (s.size() > 1 ? ", " : "") + json_string(shape);
  return s + "]";
}

// One row per fact, in order; printed as text or as JSON from the same list so the two never disagree.
struct Row {
  std::string key, text, json;
};

std::vector<Row> rows_of(const vkgmm::DeviceInfo& d) {
  auto num = [](auto v) { return std::to_string(v); };
  auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  auto yes = [](bool b) { return std::string(b ? "yes" : "no"); };
  auto hex = [](uint32_t v) {
    char s[16];
    std::snprintf(s, sizeof s, "0x%04x", v);
    return std::string(s);
  };
  const std::string wg = num(d.max_workgroup_count[0]) + ", " + num(d.max_workgroup_count[1]) + ", " +
                         num(d.max_workgroup_count[2]);
  char period[32];
  std::snprintf(period, sizeof period, "%g", static_cast<double>(d.timestamp_period_ns));
  return {
      {"name", d.name, json_string(d.name)},
      {"driver", d.driver, json_string(d.driver)},
      {"type", type_name(d.type), json_string(type_name(d.type))},
      {"api_version", api_version(d.api_version), json_string(api_version(d.api_version))},
      {"vendor_id", hex(d.vendor_id), num(d.vendor_id)},
      {"device_id", hex(d.device_id), num(d.device_id)},
      {"architecture", d.architecture + " (the device class vkgmm tunes for)", json_string(d.architecture)},
      {"subgroup_size", num(d.subgroup_size), num(d.subgroup_size)},
      {"vector_registers", num(d.vector_registers) + " per lane of a SIMD (0: not reported; sizes the shared schedule's tile)",
       num(d.vector_registers)},
      {"max_shared_memory", num(d.max_shared_memory) + " bytes", num(d.max_shared_memory)},
      {"max_workgroup_invocations", num(d.max_workgroup_invocations), num(d.max_workgroup_invocations)},
      {"max_workgroup_count", wg, "[" + wg + "]"},
      {"max_storage_buffer_range", num(d.max_storage_buffer_range) + " bytes", num(d.max_storage_buffer_range)},
      {"min_storage_buffer_offset_alignment", num(d.min_storage_buffer_offset_alignment) + " bytes",
       num(d.min_storage_buffer_offset_alignment)},
      {"device_local_bytes", num(d.device_local_bytes) + " bytes (" + num(d.device_local_bytes >> 20) + " MiB)",
       num(d.device_local_bytes)},
      {"push_descriptor", yes(d.push_descriptor) + " (required)", flag(d.push_descriptor)},
      {"storage_buffer_16bit", yes(d.storage_buffer_16bit) + " (f16 / bf16 storage)", flag(d.storage_buffer_16bit)},
      {"texel_loads_32bit", yes(d.texel_loads_32bit) + " (f32 inputs of vkgmm buffers read as texels)",
       flag(d.texel_loads_32bit)},
      {"texel_loads_16bit", yes(d.texel_loads_16bit) + " (f16 / bf16 inputs likewise)", flag(d.texel_loads_16bit)},
      {"max_texel_buffer_elements", num(d.max_texel_buffer_elements), num(d.max_texel_buffer_elements)},
      {"rhs_formats", formats_text() + " (gmm weights: the element types, then GGUF's block formats)", formats_json()},
      {"timestamps", yes(d.timestamps), flag(d.timestamps)},
      {"timestamp_period_ns", period, period},
      {"matrix_units", matrix_text(d), matrix_json(d)},
      {"matrix_shapes", shapes_text(d), shapes_json(d)},
  };
}

}  // namespace

int info_main(int argc, char** argv) {
  bool json = false;
  if (tool::wants_help(argc, argv)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && !json)
      json = true;
    else
      return fail(2, a == "--json" ? "--json given twice" : "unknown argument '" + a + "' for info (see vkgmm info --help)");
  }
  try {
    // Read now, not when the memory probes want it: a bad value is the user's input (2), refused before
    // the device is touched.
    tool::cache_bytes_override();
  } catch (const std::exception& e) {
    return fail(2, e.what());
  }
  try {
    vkgmm::Context ctx;
    std::vector<Row> rows = rows_of(ctx.info());
    // Measured rather than queried (about a second on lavapipe): the yardsticks `vkgmm bench` reports against.
    const vkgmm::DeviceCeilings ceilings = vkgmm::measure_ceilings(ctx);
    char fma[32], read[32], copy[32];
    std::snprintf(fma, sizeof fma, "%.1f", ceilings.fma_gflops);
    std::snprintf(read, sizeof read, "%.1f", ceilings.read_gbps);
    std::snprintf(copy, sizeof copy, "%.1f", ceilings.copy_gbps);
    const auto mib = [](uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; };
    const auto size = [&](const vkgmm::StreamSize& s) {
      return mib(s.run_bytes()) + " per run (" + std::to_string(s.passes) + " x " + mib(s.buffer_bytes) + ")";
    };
    rows.push_back({"fma_ceiling_gflops", std::string(fma) + " GFLOP/s (fp32 FMA from registers, measured)", fma});
    rows.push_back({"read_gbps", std::string(read) + " GB/s (streaming read through the " + ceilings.read_path +
                                     ", " + size(ceilings.read_size) + ", measured: the memory roof)",
                    read});
    rows.push_back({"copy_gbps", std::string(copy) + " GB/s (buffer copy, bytes read + written, " +
                                     size(ceilings.copy_size) + " read, measured)",
                    copy});
    rows.push_back({"cache_bytes", std::to_string(ceilings.cache.bytes) + " bytes (" + mib(ceilings.cache.bytes) +
                                       " last-level cache, " + ceilings.cache.source + ")",
                    std::to_string(ceilings.cache.bytes)});
    if (json) {
      std::string out = "{";
      for (size_t i = 0; i < rows.size(); ++i) out += (i ? ", " : "") + json_string(rows[i].key) + ": " + rows[i].json;
      std::printf("%s}\n", out.c_str());
    } else {
      for (const Row& r : rows) std::printf("%-36s %s\n", (r.key + ":").c_str(), r.text.c_str());
    }
    return 0;
  } catch (const vkgmm::Error& e) {
    // As in `vkgmm run`: a bad $VKGMM_DEVICE is the user's argument (2); anything else is the device (1).
    return fail(e.status() == vkgmm::Status::invalid_argument ? 2 : 1, e.what());
  } catch (const std::exception& e) {
    return fail(1, e.what());
  }
}
