#include "device_class.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>

namespace vkgmm {

namespace {

// The table. Register tiles: 0 x 0 keeps the register-file rule (tiling.cpp, shared_register_tile).
constexpr DeviceClass kClasses[] = {
    // CPU drivers run the direct schedule; a large tile's unrolled loop only slows their compiler.
    {"cpu", 0, 0, 4, 4, 0, 0},
    // NVIDIA: 32 lanes always, 255 registers per thread: an 8 x 8 tile fits beside the stage's operands.
    {"nvidia-turing", kVendorNvidia, 0, 8, 8, 0, 0},
    {"nvidia-ampere", kVendorNvidia, 0, 8, 8, 0, 0},
    {"nvidia-ada", kVendorNvidia, 0, 8, 8, 0, 0},
    {"nvidia-hopper", kVendorNvidia, 0, 8, 8, 0, 0},
    {"nvidia-blackwell", kVendorNvidia, 0, 8, 8, 0, 0},
    {"nvidia", kVendorNvidia, 0, 8, 8, 0, 0},
    // AMD: WMMA is a wave32 instruction (wave64 runs it as two halves).
    {"amd-rdna4", kVendorAmd, 32, 0, 0, 0, 0},
    {"amd-rdna3", kVendorAmd, 32, 0, 0, 0, 0},
    {"amd-rdna2", kVendorAmd, 0, 0, 0, 0, 0},
    {"amd-rdna1", kVendorAmd, 0, 0, 0, 0, 0},
    {"amd-gcn", kVendorAmd, 0, 0, 0, 0, 0},
    {"amd", kVendorAmd, 0, 0, 0, 0, 0},
    // Intel: DPAS runs at the EU's native width, SIMD8 on Xe-HPG and SIMD16 on Xe2.
    {"intel-xe-hpg", kVendorIntel, 8, 4, 8, 4, 1},
    {"intel-xe2", kVendorIntel, 16, 4, 8, 4, 1},
    {"intel", kVendorIntel, 0, 0, 0, 0, 1},
    {"gpu", 0, 0, 0, 0, 0, 0},
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
const char* nvidia(uint32_t id, const std::string& n) {
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
const char* amd(uint32_t id, const std::string& n) {
  if (has(n, {"GFX12", "NAVI4"}) || in(id, 0x7550, 0x7551) || id == 0x7590) return "amd-rdna4";
  if (has(n, {"GFX11", "NAVI3", "PHOENIX", "STRIX"}) || in(id, 0x7448, 0x7489) || id == 0x15bf || id == 0x15c8 ||
      id == 0x1900 || id == 0x1901 || id == 0x150e || id == 0x1586)
    return "amd-rdna3";
  if (has(n, {"GFX103", "NAVI2", "VANGOGH", "REMBRANDT", "RAPHAEL", "MENDOCINO"})) return "amd-rdna2";
  if (has(n, {"GFX101", "NAVI1"})) return "amd-rdna1";
  if (has(n, {"GFX9", "GFX8", "VEGA", "RAVEN", "RENOIR", "POLARIS", "FIJI", "TONGA"})) return "amd-gcn";
  return "amd";
}

const char* intel(uint32_t id, const std::string& n) {
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
    case kVendorNvidia: return named(nvidia(device_id, n));
    case kVendorAmd: return named(amd(device_id, n));
    case kVendorIntel: return named(intel(device_id, n));
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
