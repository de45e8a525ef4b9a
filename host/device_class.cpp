#include "device_class.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>

namespace vkgmm {

namespace {

// The generic values (DeviceClass's defaults), measured with ACO on RADV's null devices (navi21, gfx1100,
// vega10) and NAK on NVK's shim (Turing, Ampere):
//  - the shared step of 16: a step of 32 gained under a point of FMA share, took 16-24 more registers,
//    spilled on gfx1100 and left GCN one wave per SIMD;
//  - 8 chunks in flight (16 bytes each: 32 registers at most beside the accumulators): ACO spilled a
//    32-row tile of 8 x 8 per invocation on gfx1100 with 10 (64 invocations, a step of 16: 132 VGPRs);
//  - the matrix block of 128 x 128 on 8 subgroups (64 x 32 each on 16 x 16 matrices), 32-deep, at most
//    16 accumulator matrices per subgroup;
//  - 2 rows per decode invocation walking a block format: with 4 rows x 4 columns, ACO's wave64 compile
//    for gfx1100 spilled q6_K's walk (132 VGPRs, 4 KiB of scratch) and the other formats took 120 VGPRs.
constexpr DeviceClass generic(const char* architecture, uint32_t vendor) {
  DeviceClass c;
  c.architecture = architecture;
  c.vendor_id = vendor;
  return c;
}

// CPU drivers run the direct schedule; a large tile's unrolled loop only slows their compiler (lavapipe
// compiled one tgmm test's 8 x 8 tiles in 42 s against 4 s at 4 x 4).
constexpr DeviceClass cpu() {
  DeviceClass c = generic("cpu", 0);
  c.tile_rows = c.tile_cols = 4;
  c.stage_buffers = 1;
  return c;
}

// NVIDIA: 32 lanes always, 255 registers per thread: an 8 x 8 tile fits beside the stage's operands
// (NAK: 108-130 registers for gmm, 171-181 for tgmm, no spills). One stage buffer: NAK (GA102) ran the
// two-buffer loop at 78.6 % FMAs where one buffer's runs at 82.4 % (gmm, 128 x 128 f32), and spilled
// tgmm's to local memory (255 registers, 584 bytes).
constexpr DeviceClass nvidia(const char* architecture) {
  DeviceClass c = generic(architecture, kVendorNvidia);
  c.tile_rows = c.tile_cols = 8;
  c.stage_buffers = 1;
  return c;
}

// AMD: WMMA is a wave32 instruction (wave64 runs it as two halves). The register tile follows the
// register file (GCN's 256 registers per lane hold a smaller one at two waves per SIMD than RDNA's).
constexpr DeviceClass amd(const char* architecture, uint32_t matrix_subgroup) {
  DeviceClass c = generic(architecture, kVendorAmd);
  c.matrix_subgroup = matrix_subgroup;
  return c;
}

// Intel: DPAS runs at the EU's native width, SIMD8 on Xe-HPG and SIMD16 on Xe2. A thread has 128
// registers: the shared schedule's 4 x 8 tile, 4 accumulator matrices per subgroup (one 8 x 8 or 8 x 16
// f32 accumulator takes 8 registers at the DPAS width) and 1 row per decode invocation walking a block
// format keep ANV's loops unspilled (gpu-report on DG2 and BMG).
constexpr DeviceClass intel(const char* architecture, uint32_t lanes) {
  DeviceClass c = generic(architecture, kVendorIntel);
  c.matrix_subgroup = lanes;
  if (lanes) {
    c.tile_rows = 4;
    c.tile_cols = 8;
    c.matrix_fragments = 4;
  }
  c.decode_walk_rows = 1;
  c.decode_load_floats = 48;
  return c;
}

// The table: one row per class, the generic rows last of their vendor's; "gpu" (any other device) last.
constexpr DeviceClass kClasses[] = {
    cpu(),
    nvidia("nvidia-turing"), nvidia("nvidia-ampere"), nvidia("nvidia-ada"), nvidia("nvidia-hopper"),
    nvidia("nvidia-blackwell"), nvidia("nvidia"),
    amd("amd-rdna4", 32), amd("amd-rdna3", 32), amd("amd-rdna2", 0), amd("amd-rdna1", 0), amd("amd-gcn", 0),
    amd("amd", 0),
    intel("intel-xe-hpg", 8), intel("intel-xe2", 16), intel("intel", 0),
    generic("gpu", 0),
};

const DeviceClass& named(const char* architecture) {
  for (const DeviceClass& c : kClasses)
    if (std::string(c.architecture) == architecture) return c;
  return kClasses[std::size(kClasses) - 1];
}

bool has(const std::string& upper, std::initializer_list<const char*> tokens) {
  return std::any_of(tokens.begin(), tokens.end(), [&](const char* t) { return upper.find(t) != std::string::npos; });
}

bool in(uint32_t id, uint32_t first, uint32_t last) { return id >= first && id <= last; }

// NVIDIA numbers its PCI ids by generation; drivers that fake the id (NVK on a drm-shim) name the chip.
const char* nvidia_chip(uint32_t id, const std::string& n) {
  if (in(id, 0x2300, 0x233f) || has(n, {"GH1", "H100", "H200", "H800"})) return "nvidia-hopper";
  if (in(id, 0x2900, 0x2fff) || has(n, {"GB1", "GB2", "BLACKWELL"})) return "nvidia-blackwell";
  if (in(id, 0x2600, 0x28ff) || has(n, {"AD1", " ADA"})) return "nvidia-ada";
  if (in(id, 0x2000, 0x20ff) || in(id, 0x2200, 0x25ff) || has(n, {"GA1", "AMPERE"})) return "nvidia-ampere";
  if (in(id, 0x1e00, 0x1fff) || in(id, 0x2100, 0x21ff) || has(n, {"TU1", "TURING"})) return "nvidia-turing";
  return "nvidia";
}

// AMD's ids follow no order; RADV names the chip ("AMD Radeon RX 7900 XTX (RADV NAVI31)", "RADV GFX1100"),
// AMD's own drivers only the card, so the ids of the RDNA3 and RDNA4 parts (whose matrix units want
// wave32) are listed too.
const char* amd_chip(uint32_t id, const std::string& n) {
  if (has(n, {"GFX12", "NAVI4"}) || in(id, 0x7550, 0x7551) || id == 0x7590) return "amd-rdna4";
  if (has(n, {"GFX11", "NAVI3", "PHOENIX", "STRIX"}) || in(id, 0x7448, 0x7489) || id == 0x15bf || id == 0x15c8 ||
      id == 0x1900 || id == 0x1901 || id == 0x150e || id == 0x1586)
    return "amd-rdna3";
  if (has(n, {"GFX103", "NAVI2", "VANGOGH", "REMBRANDT", "RAPHAEL", "MENDOCINO"})) return "amd-rdna2";
  if (has(n, {"GFX101", "NAVI1"})) return "amd-rdna1";
  if (has(n, {"GFX9", "GFX8", "VEGA", "RAVEN", "RENOIR", "POLARIS", "FIJI", "TONGA"})) return "amd-gcn";
  return "amd";
}

const char* intel_chip(uint32_t id, const std::string& n) {
  if (in(id, 0x5690, 0x56cf) || has(n, {"DG2", "ALCHEMIST"})) return "intel-xe-hpg";
  if (in(id, 0xe200, 0xe2ff) || in(id, 0x6420, 0x64ff) || has(n, {"BMG", "LNL", "BATTLEMAGE", "LUNAR"}))
    return "intel-xe2";
  return "intel";
}

}  // namespace

const DeviceClass& device_class(uint32_t vendor_id, uint32_t device_id, VkPhysicalDeviceType type,
                                const std::string& name) {
  if (type == VK_PHYSICAL_DEVICE_TYPE_CPU) return named("cpu");
  std::string n(name);
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return char(std::toupper(c)); });
  switch (vendor_id) {
    case kVendorNvidia: return named(nvidia_chip(device_id, n));
    case kVendorAmd: return named(amd_chip(device_id, n));
    case kVendorIntel: return named(intel_chip(device_id, n));
  }
  return named("gpu");
}

const DeviceClass& device_class(VkPhysicalDevice physical) {
  VkPhysicalDeviceProperties p;
  vkGetPhysicalDeviceProperties(physical, &p);
  return device_class(p.vendorID, p.deviceID, p.deviceType, p.deviceName);
}

const DeviceClass& device_class(const DeviceInfo& info) {
  return device_class(info.vendor_id, info.device_id, info.type, info.name);
}

}  // namespace vkgmm
