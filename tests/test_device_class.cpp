// The device classes (host/device_class.cpp) and the matrix builds' subgroup size
// (choose_matrix_subgroup), for descriptions of the devices vkgmm is checked on: the limits as each
// driver reports them (NVK and NVIDIA's driver: one size; RADV: 32 or 64; ANV: 8 to 32).
#include <gtest/gtest.h>

#include "device_class.hpp"
#include "matrix_units.hpp"
#include "tiling.hpp"

namespace vkgmm {
namespace {

constexpr auto kGpu = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;

std::string arch(uint32_t vendor, uint32_t id, const char* name, VkPhysicalDeviceType type = kGpu) {
  return device_class(vendor, id, type, name).architecture;
}

TEST(DeviceClass, NamesTheArchitecture) {
  EXPECT_EQ(arch(kVendorNvidia, 0x2330, "NVIDIA H100 80GB HBM3"), "nvidia-hopper");
  EXPECT_EQ(arch(kVendorNvidia, 0x2204, "NVIDIA GeForce RTX 3090"), "nvidia-ampere");
  EXPECT_EQ(arch(kVendorNvidia, 0x20b0, "NVIDIA A100"), "nvidia-ampere");
  EXPECT_EQ(arch(kVendorNvidia, 0x2684, "NVIDIA GeForce RTX 4090"), "nvidia-ada");
  EXPECT_EQ(arch(kVendorNvidia, 0x1e04, "NVIDIA GeForce RTX 2080 Ti"), "nvidia-turing");
  EXPECT_EQ(arch(kVendorNvidia, 0x2b85, "NVIDIA GeForce RTX 5090"), "nvidia-blackwell");
  // NVK on a drm-shim fakes the id; the name carries the chip.
  EXPECT_EQ(arch(kVendorNvidia, 0, "NVK GA102"), "nvidia-ampere");
  EXPECT_EQ(arch(kVendorNvidia, 0, "NVK TU102"), "nvidia-turing");
  EXPECT_EQ(arch(kVendorAmd, 0x744c, "AMD Radeon RX 7900 XTX (RADV NAVI31)"), "amd-rdna3");
  EXPECT_EQ(arch(kVendorAmd, 0, "AMD RADV GFX1100"), "amd-rdna3");
  EXPECT_EQ(arch(kVendorAmd, 0, "AMD RADV NAVI21"), "amd-rdna2");
  EXPECT_EQ(arch(kVendorAmd, 0, "AMD RADV VEGA10"), "amd-gcn");
  EXPECT_EQ(arch(kVendorAmd, 0x73bf, "AMD Radeon RX 6800"), "amd");  // no chip in the name: generic
  EXPECT_EQ(arch(kVendorAmd, 0x744c, "AMD Radeon RX 7900 XTX"), "amd-rdna3");  // AMD's driver: by id
  EXPECT_EQ(arch(kVendorIntel, 0x56a0, "Intel(R) Arc(tm) A770 Graphics (DG2)"), "intel-xe-hpg");
  EXPECT_EQ(arch(kVendorIntel, 0xe20b, "Intel(R) Graphics (BMG G21)"), "intel-xe2");
  EXPECT_EQ(arch(kVendorIntel, 0x7d55, "Intel(R) Graphics (MTL)"), "intel");
  EXPECT_EQ(arch(0x10005, 0, "llvmpipe (LLVM 15.0.6, 256 bits)", VK_PHYSICAL_DEVICE_TYPE_CPU), "cpu");
  EXPECT_EQ(arch(0x13b5, 0, "Mali-G710"), "gpu");
}

TEST(DeviceClass, RowsSetTheMatrixSubgroupAndTile) {
  EXPECT_EQ(device_class(kVendorAmd, 0, kGpu, "RADV NAVI31").matrix_subgroup, 32u);
  EXPECT_EQ(device_class(kVendorIntel, 0x56a0, kGpu, "").matrix_subgroup, 8u);
  EXPECT_EQ(device_class(kVendorIntel, 0xe20b, kGpu, "").matrix_subgroup, 16u);
  EXPECT_EQ(device_class(kVendorNvidia, 0x2330, kGpu, "").matrix_subgroup, 0u);
  // The shared schedule's tile comes from the row where it names one (CPU drivers), else the register file.
  DeviceInfo cpu;
  cpu.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
  EXPECT_EQ(shared_register_tile(cpu).rows, 4u);
  DeviceInfo gcn;
  gcn.type = kGpu;
  gcn.vendor_id = kVendorAmd;
  gcn.name = "AMD RADV VEGA10";
  gcn.vector_registers = 160;
  EXPECT_EQ(shared_register_tile(gcn).cols, 4u);
  DeviceInfo nv;
  nv.type = kGpu;
  nv.vendor_id = kVendorNvidia;
  nv.device_id = 0x2330;
  EXPECT_EQ(shared_register_tile(nv).rows, 8u);
  EXPECT_EQ(shared_register_tile(nv).cols, 8u);
}

SubgroupLimits limits(uint32_t size, uint32_t min, uint32_t max, bool required_in_compute, bool full = true) {
  SubgroupLimits l;
  l.size = size;
  l.min = min;
  l.max = max;
  l.required_in_compute = required_in_compute;
  l.size_control = true;
  l.full_subgroups = full;
  return l;
}

uint32_t preferred(uint32_t vendor, uint32_t id, const char* name) {
  return device_class(vendor, id, kGpu, name).matrix_subgroup;
}

TEST(MatrixSubgroup, NvkFixedSizeNeedsNoRequiredSize) {
  // NVK: 32 lanes only, and the compute stage takes no required size.
  const MatrixSubgroup g = choose_matrix_subgroup(limits(32, 32, 32, false), preferred(kVendorNvidia, 0, "NVK GA102"));
  EXPECT_EQ(g.size, 32u);
  EXPECT_FALSE(g.required);
  EXPECT_TRUE(g.full);
  // Without the full-subgroups feature a fixed size still runs (the workgroup is whole subgroups).
  const MatrixSubgroup bare = choose_matrix_subgroup(limits(32, 32, 32, false, false), 0);
  EXPECT_EQ(bare.size, 32u);
  EXPECT_FALSE(bare.full);
}

TEST(MatrixSubgroup, NvidiaDriverKeepsItsSize) {
  const MatrixSubgroup g = choose_matrix_subgroup(limits(32, 32, 32, true), preferred(kVendorNvidia, 0x2330, "H100"));
  EXPECT_EQ(g.size, 32u);
  EXPECT_FALSE(g.required);
}

TEST(MatrixSubgroup, Rdna3TakesWave32) {
  // RADV on RDNA3: wave64 by default, 32 allowed.
  const MatrixSubgroup g = choose_matrix_subgroup(limits(64, 32, 64, true), preferred(kVendorAmd, 0, "RADV NAVI31"));
  EXPECT_EQ(g.size, 32u);
  EXPECT_TRUE(g.required);
  EXPECT_TRUE(g.full);
}

TEST(MatrixSubgroup, IntelTakesTheEuWidth) {
  const MatrixSubgroup dg2 = choose_matrix_subgroup(limits(32, 8, 32, true), preferred(kVendorIntel, 0x56a0, ""));
  EXPECT_EQ(dg2.size, 8u);
  EXPECT_TRUE(dg2.required);
  const MatrixSubgroup bmg = choose_matrix_subgroup(limits(32, 16, 32, true), preferred(kVendorIntel, 0xe20b, ""));
  EXPECT_EQ(bmg.size, 16u);
  // A preference outside the device's range falls back to its default size, required.
  const MatrixSubgroup odd = choose_matrix_subgroup(limits(32, 16, 32, true), 8);
  EXPECT_EQ(odd.size, 32u);
  EXPECT_TRUE(odd.required);
}

TEST(MatrixSubgroup, VaryingSizeMustBePinnedAndFull) {
  EXPECT_EQ(choose_matrix_subgroup(limits(64, 32, 64, false), 32).size, 0u);        // cannot require a size
  EXPECT_EQ(choose_matrix_subgroup(limits(64, 32, 64, true, false), 32).size, 0u);  // cannot promise full ones
  SubgroupLimits none = limits(64, 32, 64, true);
  none.size_control = false;
  EXPECT_EQ(choose_matrix_subgroup(none, 32).size, 0u);
}

// Intel's rows: the shared schedule's 4 x 8 tile, 4 accumulator matrices per subgroup and 1 row per decode
// invocation walking a block format keep ANV's SIMD8 / SIMD16 loops inside 128 registers (gpu-report on
// DG2 and BMG: no spills); NVIDIA's and AMD's keep the defaults.
TEST(DeviceClass, IntelRowsFitItsRegisterFile) {
  for (uint32_t id : {0x56a0u, 0xe20bu}) {
    const DeviceClass& c = device_class(kVendorIntel, id, kGpu, "");
    EXPECT_EQ(c.tile_rows, 4u);
    EXPECT_EQ(c.tile_cols, 8u);
    EXPECT_EQ(c.matrix_fragments, 4u);
    EXPECT_EQ(c.decode_walk_rows, 1u);
  }
  const DeviceClass& nv = device_class(kVendorNvidia, 0x2204, kGpu, "");
  EXPECT_EQ(nv.matrix_fragments, 16u);
  EXPECT_EQ(nv.decode_walk_rows, 2u);
  DeviceInfo dg2;
  dg2.type = kGpu;
  dg2.vendor_id = kVendorIntel;
  dg2.device_id = 0x56a0;
  dg2.subgroup_size = 32;
  dg2.matrix_subgroup_size = 8;
  dg2.matrix_m = dg2.matrix_n = 8;
  dg2.matrix_k = 16;
  dg2.max_shared_memory = 65536;
  dg2.max_workgroup_invocations = 1024;
  EXPECT_EQ(shared_register_tile(dg2).rows, 4u);
  const KernelShape s = make_matrix_shape(128, 32, 128, 4096, 1024, 1024, dg2, "gmm", 1, false);
  EXPECT_LE((s.rows / (s.sg_m * s.cm_m)) * (s.cols / (s.sg_n * s.cm_n)), 4u);
  EXPECT_EQ(s.sg_m * s.sg_n, device_class(dg2).matrix_subgroups);
}

// The matrix block's workgroup is its subgroups times the matrix subgroup size, not the default size.
TEST(MatrixSubgroup, BlockTilesBySubgroupsOfTheChosenSize) {
  DeviceInfo info;
  info.type = kGpu;
  info.subgroup_size = 32;
  info.matrix_subgroup_size = 8;
  info.matrix_m = info.matrix_n = 8;
  info.matrix_k = 16;
  info.max_shared_memory = 65536;
  info.max_workgroup_invocations = 1024;
  const KernelShape s = make_matrix_shape(128, 32, 128, 4096, 1024, 1024, info, "gmm", 1, false);
  EXPECT_EQ(s.invocations(), s.sg_m * s.sg_n * 8u);
  EXPECT_EQ(s.sg_m * s.sg_n, device_class(info).matrix_subgroups);
}

}  // namespace
}  // namespace vkgmm
