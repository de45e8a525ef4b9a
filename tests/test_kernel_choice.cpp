// choose_kernel (host/kernel_choice.hpp) on descriptions of the devices vkgmm targets: each device class's
// row pinned by the kernel it gives the bench's moe-prefill shape (gmm and tgmm, f32 on the FMA schedules,
// f16 on the matrix units) and decode. A change to a row, or to the rules that read it, shows here.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device_class.hpp"
#include "kernel_choice.hpp"

namespace vkgmm {
namespace {

struct Described {
  const char* what;
  DeviceInfo info;
};

DeviceInfo gpu(uint32_t vendor, uint32_t device, const char* name, uint32_t subgroup, uint32_t shared,
               uint32_t vector_registers) {
  DeviceInfo d;
  d.type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  d.vendor_id = vendor;
  d.device_id = device;
  d.name = name;
  d.subgroup_size = subgroup;
  d.max_shared_memory = shared;
  d.max_workgroup_invocations = 1024;
  d.vector_registers = vector_registers;
  d.max_workgroup_count[0] = d.max_workgroup_count[1] = d.max_workgroup_count[2] = 65535;
  d.compute_units = 64;
  return d;
}

DeviceInfo with_matrix(DeviceInfo d, uint32_t m, uint32_t n, uint32_t k, uint32_t lanes) {
  d.matrix_extension = "VK_KHR_cooperative_matrix";
  d.matrix_m = m;
  d.matrix_n = n;
  d.matrix_k = k;
  d.matrix_subgroup_size = lanes;
  d.matrix_automatic = true;
  return d;
}

// NVIDIA's proprietary driver: its matrix units are taken only when asked for (DeviceInfo::matrix_automatic).
DeviceInfo untrusted(DeviceInfo d) {
  d.matrix_automatic = false;
  return d;
}

// The limits as each driver reports them.
std::vector<Described> devices() {
  DeviceInfo lavapipe = gpu(0x10005, 0, "llvmpipe (LLVM 15.0.6, 256 bits)", 8, 32768, 0);
  lavapipe.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
  return {
      {"lavapipe", lavapipe},
      {"H100", untrusted(with_matrix(gpu(kVendorNvidia, 0x2330, "NVIDIA H100 80GB HBM3", 32, 49152, 0), 16, 16, 16, 32))},
      {"NVK GA102", with_matrix(gpu(kVendorNvidia, 0, "NVK GA102", 32, 49152, 0), 16, 8, 16, 32)},
      {"RADV NAVI31", with_matrix(gpu(kVendorAmd, 0x744c, "AMD Radeon RX 7900 XTX (RADV NAVI31)", 64, 65536, 512), 16, 16,
                                  16, 32)},
      {"RADV VEGA10", gpu(kVendorAmd, 0x687f, "AMD Radeon RX Vega (RADV VEGA10)", 64, 65536, 256)},
      {"ANV DG2", with_matrix(gpu(kVendorIntel, 0x56a0, "Intel(R) Arc(tm) A770 Graphics (DG2)", 32, 65536, 0), 8, 8, 16, 8)},
      {"ANV BMG", with_matrix(gpu(kVendorIntel, 0xe20b, "Intel(R) Graphics (BMG G21)", 32, 131072, 0), 8, 16, 16, 16)},
  };
}

// moe-prefill: 8 experts of 512 rows, k = n = 1024.
const std::vector<int32_t> kPrefillGroups(8, 512);
// decode: 8 experts of 2 rows.
const std::vector<int32_t> kDecodeGroups(8, 2);

KernelRequest gmm_request(const std::vector<int32_t>& groups, bool f16, const DeviceInfo& info) {
  KernelRequest q;
  q.op = Op::gmm;
  int64_t rows = 0;
  for (int32_t g : groups) rows += g;
  q.m = rows;
  q.k = q.n = 1024;
  q.vec4 = true;
  q.groups = {&groups, 0, int64_t(groups.size())};
  q.rhs_rows_contiguous = true;
  if (!f16 || info.matrix_extension.empty()) q.matrix_refusal = "gmm: schedule matrix: not this call";
  return q;
}

KernelRequest tgmm_request(bool f16, const DeviceInfo& info) {
  KernelRequest q;
  q.op = Op::tgmm;
  q.m = 4096;
  q.k = q.n = 1024;
  q.vec4 = true;
  q.vec4_lhs_rows = false;
  if (!f16 || info.matrix_extension.empty()) q.matrix_refusal = "tgmm: schedule matrix: not this call";
  return q;
}

// "schedule (tm, tk, tn) tx x ty of rm x rn [slices] [in flight] [stages] [matrix sg_m x sg_n of cm_m x cm_n x cm_k]".
std::string text(const KernelChoice& c) {
  const KernelShape& s = c.shape;
  const Tiling t = c.tiling();
  std::string out = std::string(schedule_name(c.schedule)) + " (" + std::to_string(t.tm) + ", " + std::to_string(t.tk) +
                    ", " + std::to_string(t.tn) + ") " + std::to_string(s.tx) + "x" + std::to_string(s.ty) + " of " +
                    std::to_string(s.rm) + "x" + std::to_string(s.rn);
  if (s.slices > 1) out += " slices " + std::to_string(s.slices);
  if (s.steps_in_flight > 1) out += " in flight " + std::to_string(s.steps_in_flight);
  if (s.stages > 1) out += " stages " + std::to_string(s.stages);
  if (s.matrix)
    out += " matrix " + std::to_string(s.sg_m) + "x" + std::to_string(s.sg_n) + " of " + std::to_string(s.cm_m) + "x" +
           std::to_string(s.cm_n) + "x" + std::to_string(s.cm_k);
  return out;
}

struct Pinned {
  const char* device;
  const char* gmm_f32;
  const char* gmm_f16;
  const char* tgmm_f32;
  const char* tgmm_f16;
  const char* decode_f32;
};

// What each device's row gives (the H100's f16 on the shared schedule: NVIDIA's driver keeps the automatic
// schedule off its matrix units, DeviceInfo::matrix_automatic). lavapipe runs the direct schedule (decode: whole rows of rhs [k, n]);
// NVIDIA the 8 x 8 register tile; AMD's tile from its register file (GCN's 256 registers: 8 x 8 at two
// waves); the matrix block 128 x 128 over 8 subgroups, except on Intel, whose 4 accumulator matrices per
// subgroup at the DPAS width shrink it (32 x 64 on DG2's 8 x 8 matrices, 32 x 128 on BMG's 8 x 16) and
// its step to 16; Intel's shared tile 4 x 8; two stage buffers on the shared schedule, except NVIDIA's;
// GPUs' decode 2 rows by 32 columns over 32 K slices, two quads of K in flight (64 bytes of f32 weights
// each per invocation).
const Pinned kPinned[] = {
    {"lavapipe", "direct (32, 4, 128) 8x2 of 16x16", "direct (32, 4, 128) 8x2 of 16x16", "direct (4, 128, 128) 8x8 of 16x16",
     "direct (4, 128, 128) 8x8 of 16x16", "direct (2, 4, 1024) 8x1 of 2x128"},
    {"H100", "shared (128, 16, 128) 16x16 of 8x8", "shared (128, 16, 128) 16x16 of 8x8",
     "shared (16, 128, 128) 16x16 of 8x8", "shared (16, 128, 128) 16x16 of 8x8", "direct (2, 4, 32) 8x1 of 2x4 slices 32 in flight 2"},
    {"NVK GA102", "shared (128, 16, 128) 16x16 of 8x8", "matrix (128, 32, 128) 32x8 of 16x4 matrix 2x4 of 16x8x16",
     "shared (16, 128, 128) 16x16 of 8x8", "matrix (32, 128, 128) 32x8 of 16x4 matrix 2x4 of 16x8x16",
     "direct (2, 4, 32) 8x1 of 2x4 slices 32 in flight 2"},
    {"RADV NAVI31", "shared (128, 16, 128) 16x16 of 8x8 stages 2",
     "matrix (128, 32, 128) 32x8 of 16x4 matrix 2x4 of 16x16x16",
     "shared (16, 128, 128) 16x16 of 8x8 stages 2", "matrix (32, 128, 128) 32x8 of 16x4 matrix 2x4 of 16x16x16",
     "direct (2, 4, 32) 8x1 of 2x4 slices 32 in flight 2"},
    {"RADV VEGA10", "shared (128, 16, 128) 16x16 of 8x8 stages 2", "shared (128, 16, 128) 16x16 of 8x8 stages 2",
     "shared (16, 128, 128) 16x16 of 8x8 stages 2", "shared (16, 128, 128) 16x16 of 8x8 stages 2",
     "direct (2, 4, 32) 8x1 of 2x4 slices 32 in flight 2"},
    {"ANV DG2", "shared (64, 16, 128) 16x16 of 4x8 stages 2", "matrix (32, 16, 64) 16x4 of 8x4 matrix 2x4 of 8x8x16",
     "shared (16, 64, 128) 16x16 of 4x8 stages 2", "matrix (16, 32, 64) 16x4 of 8x4 matrix 2x4 of 8x8x16",
     "direct (2, 4, 32) 8x1 of 2x4 slices 32 in flight 2"},
    {"ANV BMG", "shared (64, 16, 128) 16x16 of 4x8 stages 2", "matrix (32, 16, 128) 32x4 of 8x4 matrix 1x8 of 8x16x16",
     "shared (16, 64, 128) 16x16 of 4x8 stages 2", "matrix (16, 32, 128) 32x4 of 8x4 matrix 1x8 of 8x16x16",
     "direct (2, 4, 32) 8x1 of 2x4 slices 32 in flight 2"},
};

TEST(KernelChoice, EachDeviceClassGetsItsPinnedKernel) {
  const ResolvedOptions options;
  const std::vector<Described> all = devices();
  ASSERT_EQ(all.size(), std::size(kPinned));
  for (size_t i = 0; i < all.size(); ++i) {
    const DeviceInfo& d = all[i].info;
    const Pinned& want = kPinned[i];
    SCOPED_TRACE(std::string(all[i].what) + " (" + device_class(d).architecture + ")");
    ASSERT_STREQ(all[i].what, want.device);
    auto choose = [&](const KernelRequest& q) { return text(choose_kernel(q, d, d, options)); };
    EXPECT_EQ(choose(gmm_request(kPrefillGroups, false, d)), want.gmm_f32);
    EXPECT_EQ(choose(gmm_request(kPrefillGroups, true, d)), want.gmm_f16);
    EXPECT_EQ(choose(tgmm_request(false, d)), want.tgmm_f32);
    EXPECT_EQ(choose(tgmm_request(true, d)), want.tgmm_f16);
    EXPECT_EQ(choose(gmm_request(kDecodeGroups, false, d)), want.decode_f32);
  }
}

// A gated activation's two accumulator halves and a block format's decode walk (its rows per invocation
// are the row's decode_walk_rows: Intel walks one, the others two), on the generic rows too (Intel, AMD
// and any other GPU that names no known chip). q4_0's walk takes two steps in flight (72 bytes of weights
// each per invocation), except on Intel, whose decode_load_floats hold one.
TEST(KernelChoice, GatedPrefillAndBlockDecode) {
  const ResolvedOptions options;
  std::vector<Described> all = devices();
  all.push_back({"Intel MTL", gpu(kVendorIntel, 0x7d55, "Intel(R) Graphics (MTL)", 32, 65536, 0)});
  all.push_back({"AMD RX 6800", gpu(kVendorAmd, 0x73bf, "AMD Radeon RX 6800", 64, 65536, 512)});
  all.push_back({"Mali", gpu(0x13b5, 0, "Mali-G710", 16, 32768, 0)});
  struct Want {
    const char* device;
    const char* swiglu_prefill;
    const char* q4_0_decode;
  };
  const Want wants[] = {
      {"lavapipe", "direct (32, 4, 128) 8x4 of 8x16", "direct (2, 4, 128) 8x1 of 2x16"},
      {"H100", "shared (128, 16, 64) 16x16 of 8x4", "direct (2, 4, 32) 8x1 of 2x4 slices 16 in flight 2"},
      {"NVK GA102", "shared (128, 16, 64) 16x16 of 8x4", "direct (2, 4, 32) 8x1 of 2x4 slices 16 in flight 2"},
      {"RADV NAVI31", "shared (128, 16, 64) 16x16 of 8x4 stages 2",
       "direct (2, 4, 32) 8x1 of 2x4 slices 16 in flight 2"},
      {"RADV VEGA10", "shared (128, 16, 64) 16x16 of 8x4 stages 2",
       "direct (2, 4, 32) 8x1 of 2x4 slices 16 in flight 2"},
      {"ANV DG2", "shared (64, 16, 64) 16x16 of 4x4 stages 2", "direct (2, 4, 32) 8x2 of 1x4 slices 16"},
      {"ANV BMG", "shared (64, 16, 64) 16x16 of 4x4 stages 2", "direct (2, 4, 32) 8x2 of 1x4 slices 16"},
      {"Intel MTL", "shared (128, 16, 64) 16x16 of 8x4 stages 2", "direct (2, 4, 32) 8x2 of 1x4 slices 16"},
      {"AMD RX 6800", "shared (128, 16, 64) 16x16 of 8x4 stages 2",
       "direct (2, 4, 32) 8x1 of 2x4 slices 16 in flight 2"},
      // Mali's 32 KiB per workgroup holds one 16 KiB stage beside the rest, not two.
      {"Mali", "shared (128, 16, 64) 16x16 of 8x4", "direct (2, 4, 32) 8x1 of 2x4 slices 16 in flight 2"},
  };
  ASSERT_EQ(all.size(), std::size(wants));
  for (size_t i = 0; i < all.size(); ++i) {
    const DeviceInfo& d = all[i].info;
    SCOPED_TRACE(std::string(all[i].what) + " (" + device_class(d).architecture + ")");
    ASSERT_STREQ(all[i].what, wants[i].device);
    KernelRequest swiglu = gmm_request(kPrefillGroups, false, d);
    swiglu.halves = 2;
    EXPECT_EQ(text(choose_kernel(swiglu, d, d, options)), wants[i].swiglu_prefill);
    KernelRequest q4_0 = gmm_request(kDecodeGroups, false, d);
    q4_0.rhs_rows_contiguous = false;  // rhs [n, k], GGUF's layout
    q4_0.rhs_blocks = true;
    q4_0.k_walk = k_walk_step(DType::q4_0, true, true);
    EXPECT_EQ(text(choose_kernel(q4_0, d, d, options)), wants[i].q4_0_decode);
  }
}

// q2_K's GPU decode walks a half super-block per step (VKGMM_WIDE_PARTS: four 32-value parts sharing
// their quant words), one step in flight, each K slice at least one such step: at k = 1024, 8 slices of
// 128 values. q3_K keeps the table's 32-value step on GPUs (its hmask words beside four parts spilled on
// ANV), its slices two steps; so do the other formats. CPU devices take four parts for both in the
// texel build (q3_K one in the storage build); the host does not size CPU decode by the walk.
TEST(KernelChoice, WideStepsSizeTheGpuDecodeSlices) {
  const ResolvedOptions options;
  const KWalkStep q2 = k_walk_step(DType::q2_K, true, true), q3 = k_walk_step(DType::q3_K, true, true);
  EXPECT_EQ(q2.values, 128u);
  EXPECT_EQ(q2.least_slice_values, 64u);
  EXPECT_EQ(q2.most_steps, 1u);
  EXPECT_EQ(q3.values, 32u);
  EXPECT_EQ(q3.least_slice_values, 64u);
  const KWalkStep q4_0 = k_walk_step(DType::q4_0, true, true);
  EXPECT_EQ(q4_0.least_slice_values, 2 * q4_0.values);
  for (const Described& dev : devices()) {
    const DeviceInfo& d = dev.info;
    if (d.type == VK_PHYSICAL_DEVICE_TYPE_CPU) continue;
    SCOPED_TRACE(dev.what);
    auto decode = [&](DType t) {
      KernelRequest q = gmm_request(kDecodeGroups, false, d);
      q.rhs_rows_contiguous = false;
      q.rhs_blocks = true;
      q.k_walk = k_walk_step(t, true, true);
      return choose_kernel(q, d, d, options).shape;
    };
    const KernelShape s2 = decode(DType::q2_K), s3 = decode(DType::q3_K);
    EXPECT_EQ(s2.steps_in_flight, 1u);
    EXPECT_LT(s2.rm, 16u) << "the shader's wide step is taken under 16 rows";
    EXPECT_EQ(s2.slices, 8u);
    EXPECT_EQ(s3.slices, 16u);
  }
}

// Planned as another device (tiling_device.hpp): the schedule and tiles are that device's, what may run
// the real one's.
TEST(KernelChoice, PlansAsTheTilingDevice) {
  const ResolvedOptions options;
  const std::vector<Described> all = devices();
  const DeviceInfo& lavapipe = all[0].info;
  const DeviceInfo& h100 = all[1].info;
  const KernelRequest q = gmm_request(kPrefillGroups, false, lavapipe);
  EXPECT_EQ(text(choose_kernel(q, lavapipe, h100, options)), "shared (128, 16, 128) 16x16 of 8x8");
  EXPECT_EQ(text(choose_kernel(q, h100, lavapipe, options)), "direct (32, 4, 128) 8x2 of 16x16");
}

// The kernel the H100's row gives holds the row's values (which equal the generic ones, so this pins
// where each value shows in the kernel, not that the row differs).
TEST(KernelChoice, RowFieldsReachTheKernel) {
  const ResolvedOptions options;
  const DeviceInfo h100 = devices()[1].info;
  const DeviceClass& row = device_class(h100);
  const KernelChoice shared = choose_kernel(gmm_request(kPrefillGroups, false, h100), h100, h100, options);
  EXPECT_EQ(shared.shape.step, row.shared_step);
  EXPECT_EQ(shared.shape.rm, row.tile_rows);
  EXPECT_EQ(shared.shape.rn, row.tile_cols);
  KernelRequest asked = gmm_request(kPrefillGroups, true, h100);
  asked.requested = Schedule::matrix;
  const KernelChoice matrix = choose_kernel(asked, h100, h100, options);
  EXPECT_EQ(matrix.shape.rows, row.matrix_rows);
  EXPECT_EQ(matrix.shape.cols, row.matrix_cols);
  EXPECT_EQ(matrix.shape.step, row.matrix_step);
  EXPECT_EQ(matrix.shape.sg_m * matrix.shape.sg_n, row.matrix_subgroups);
  EXPECT_LE((matrix.shape.rows / (matrix.shape.sg_m * matrix.shape.cm_m)) *
                (matrix.shape.cols / (matrix.shape.sg_n * matrix.shape.cm_n)),
            row.matrix_fragments);
}

// The shared schedule's stage takes the class's two buffers where both fit the device's shared memory and
// each invocation holds at most half the class's chunks in flight: RDNA3's 128 x 128 f32 block (16 KiB, 4
// chunks) takes two, but keeps one on a device of 32 KiB per workgroup; its 32-row block for short groups
// (5 chunks per invocation, 64 invocations) keeps one. CPU devices keep one (the shared schedule forced on
// lavapipe), and so do NVIDIA's (its row) and the matrix builds.
TEST(KernelChoice, StageBuffersWhereTheyFit) {
  const ResolvedOptions options;
  const DeviceInfo navi31 = devices()[3].info;
  auto stages = [&](const std::vector<int32_t>& groups, bool f16, const DeviceInfo& d) {
    const KernelChoice c = choose_kernel(gmm_request(groups, f16, d), d, d, options);
    return std::make_pair(c.shape.stages, text(c));
  };
  EXPECT_EQ(stages(kPrefillGroups, false, navi31).first, device_class(navi31).stage_buffers);
  EXPECT_EQ(device_class(navi31).stage_buffers, 2u);
  DeviceInfo small = navi31;
  small.max_shared_memory = 32768;
  EXPECT_EQ(stages(kPrefillGroups, false, small).first, 1u);
  const auto short_rows = stages(std::vector<int32_t>(64, 30), false, navi31);
  EXPECT_EQ(short_rows.second, "shared (32, 8, 128) 16x4 of 8x8");
  EXPECT_EQ(short_rows.first, 1u);
  EXPECT_EQ(stages(kPrefillGroups, false, devices()[1].info).first, 1u);  // H100
  const auto matrix = stages(kPrefillGroups, true, navi31);
  EXPECT_NE(matrix.second.find("matrix"), std::string::npos) << matrix.second;
  EXPECT_EQ(matrix.first, 1u);
  const DeviceInfo lavapipe = devices()[0].info;
  KernelRequest forced = gmm_request(kPrefillGroups, false, lavapipe);
  forced.requested = Schedule::shared;
  const KernelChoice cpu = choose_kernel(forced, lavapipe, lavapipe, options);
  EXPECT_TRUE(cpu.shape.use_shared);
  EXPECT_EQ(cpu.shape.stages, 1u);
}

// $VKGMM_STAGE_BUFFERS (ResolvedOptions::stage_buffers) asks for the other count, for timing it: two on
// the H100, whose class keeps one, and one on NAVI31; on the matrix units two where they are asked for
// (make_matrix_shape: no class takes them); still only where two fit. tgmm follows it too.
TEST(KernelChoice, StageBuffersAsTheOptionsSay) {
  const DeviceInfo h100 = devices()[1].info, navi31 = devices()[3].info;
  ResolvedOptions two, one;
  two.stage_buffers = 2;
  one.stage_buffers = 1;
  auto gmm = [&](const DeviceInfo& d, const ResolvedOptions& o, bool f16 = false) {
    return choose_kernel(gmm_request(kPrefillGroups, f16, d), d, d, o).shape.stages;
  };
  EXPECT_EQ(gmm(h100, ResolvedOptions{}), 1u);
  EXPECT_EQ(gmm(h100, two), 2u);
  EXPECT_EQ(choose_kernel(tgmm_request(false, h100), h100, h100, two).shape.stages, 2u);
  EXPECT_EQ(gmm(navi31, one), 1u);
  // The matrix schedule's 128 x 128 f16 block: 20 KiB per buffer and 8 KiB of accumulators on their way
  // out.
  EXPECT_EQ(gmm(navi31, ResolvedOptions{}, true), 1u);
  const KernelChoice gmm_two = choose_kernel(gmm_request(kPrefillGroups, true, navi31), navi31, navi31, two);
  EXPECT_TRUE(gmm_two.shape.matrix);
  EXPECT_EQ(gmm_two.shape.stages, 2u);
  const KernelChoice tgmm_two = choose_kernel(tgmm_request(true, navi31), navi31, navi31, two);
  EXPECT_TRUE(tgmm_two.shape.matrix);
  EXPECT_EQ(tgmm_two.shape.stages, 2u);
  DeviceInfo small = h100;
  small.max_shared_memory = 32768;  // 16 KiB per buffer at 128 x 128: one
  EXPECT_EQ(gmm(small, two), 1u);
  DeviceInfo small_matrix = navi31;
  small_matrix.max_shared_memory = 40960;  // one buffer's 28 KiB fits, two do not
  const KernelShape small_two =
      choose_kernel(gmm_request(kPrefillGroups, true, small_matrix), small_matrix, small_matrix, two).shape;
  EXPECT_TRUE(small_two.matrix);
  EXPECT_EQ(small_two.rows, 128u);
  EXPECT_EQ(small_two.stages, 1u);
}

// On a driver whose matrix results are not trusted (the H100's, NVIDIA's own), the automatic schedule
// keeps f16 on the FMAs; the matrix units run where the problem asks for them or the context forces them,
// with the block a trusted driver would get.
TEST(KernelChoice, UntrustedMatrixUnitsRunOnlyWhenAsked) {
  const DeviceInfo h100 = devices()[1].info;
  ASSERT_FALSE(h100.matrix_automatic);
  const char* const block = "matrix (128, 32, 128) 32x8 of 16x4 matrix 2x4 of 16x16x16";
  ResolvedOptions options;
  KernelRequest q = gmm_request(kPrefillGroups, true, h100);
  EXPECT_EQ(text(choose_kernel(q, h100, h100, options)), "shared (128, 16, 128) 16x16 of 8x8");
  q.requested = Schedule::matrix;
  EXPECT_EQ(text(choose_kernel(q, h100, h100, options)), block);
  q.requested = Schedule::automatic;
  options.schedule = Schedule::matrix;
  EXPECT_EQ(text(choose_kernel(q, h100, h100, options)), block);
  options.schedule = Schedule::automatic;
  KernelRequest t = tgmm_request(true, h100);
  EXPECT_EQ(choose_kernel(t, h100, h100, options).schedule, Schedule::shared);
  t.requested = Schedule::matrix;
  EXPECT_EQ(text(choose_kernel(t, h100, h100, options)), "matrix (32, 128, 128) 32x8 of 16x4 matrix 2x4 of 16x16x16");
  DeviceInfo trusted = h100;
  trusted.matrix_automatic = true;
  EXPECT_EQ(text(choose_kernel(gmm_request(kPrefillGroups, true, trusted), trusted, trusted, options)), block);
}

// One long group among 24 of a few rows, on a GPU of 2 compute units (a grid of many waves): every class's
// shared and matrix blocks of 64 rows or more take tile heights of their own (Intel's 32-row matrix blocks
// gain too little from 16-row ones), each height's shape with that height's rows and the first one's
// columns and schedule. Not where the sizes are on the device, nor on lavapipe.
TEST(KernelChoice, TileHeightsPerGroup) {
  std::vector<int32_t> skewed = {900};
  for (int32_t i = 0; i < 24; ++i) skewed.push_back(1 + i % 9);
  const ResolvedOptions options;
  for (Described d : devices()) {
    d.info.compute_units = 2;
    for (bool f16 : {false, true}) {
      SCOPED_TRACE(std::string(d.what) + (f16 ? " f16" : " f32"));
      KernelRequest q = gmm_request(skewed, f16, d.info);
      const KernelChoice one = choose_kernel(q, d.info, d.info, options);
      EXPECT_TRUE(one.heights.heights.empty());
      q.heights_per_group = true;
      const KernelChoice c = choose_kernel(q, d.info, d.info, options);
      if (d.info.type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
        EXPECT_TRUE(c.heights.heights.empty());
        continue;
      }
      // The rows the class's block keeps (a fixed tiling of the range's largest height, shrunk as it runs).
      KernelRequest largest = q;
      const TilingChoice fixed = TilingChoice::of({gmm_m_tile_range(one.schedule, d.info).largest, 16, 128});
      largest.tiling = &fixed;
      if (choose_kernel(largest, d.info, d.info, options).shape.rows < 64) continue;
      ASSERT_GE(c.heights.heights.size(), 2u) << text(one);
      ASSERT_EQ(c.later_shapes.size(), c.heights.heights.size() - 1);
      EXPECT_EQ(c.schedule, one.schedule);
      EXPECT_EQ(c.shape.rows, c.heights.heights[0]);
      for (size_t i = 0; i < c.later_shapes.size(); ++i) {
        EXPECT_EQ(c.later_shapes[i].rows, c.heights.heights[i + 1]);
        EXPECT_LT(c.later_shapes[i].rows, c.shape.rows);
        EXPECT_EQ(c.later_shapes[i].cols, c.shape.cols);
        EXPECT_EQ(c.later_shapes[i].matrix, c.shape.matrix);
      }
    }
  }
}

// The schedule rules the choice owns: matrix asked of a call that cannot take it is refused by name;
// forced on the context, the call runs shared; the caller's tiling is kept where it can run.
TEST(KernelChoice, ScheduleRules) {
  const DeviceInfo h100 = devices()[1].info;
  ResolvedOptions options;
  KernelRequest q = gmm_request(kPrefillGroups, false, h100);
  q.requested = Schedule::matrix;
  try {
    choose_kernel(q, h100, h100, options);
    ADD_FAILURE() << "matrix asked of an f32 call";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::unsupported);
    EXPECT_NE(std::string(e.what()).find("not this call"), std::string::npos) << e.what();
  }
  q.requested = Schedule::automatic;
  options.schedule = Schedule::matrix;
  EXPECT_EQ(choose_kernel(q, h100, h100, options).schedule, Schedule::shared);
  options.schedule = Schedule::automatic;
  const TilingChoice fixed = TilingChoice::of(Tiling{64, 8, 64});
  q.tiling = &fixed;
  const KernelChoice c = choose_kernel(q, h100, h100, options);
  EXPECT_EQ(c.schedule, Schedule::shared);
  EXPECT_EQ(c.tiling().tm, 64);
  EXPECT_EQ(c.tiling().tk, 8);
  EXPECT_EQ(c.tiling().tn, 64);
}

}  // namespace
}  // namespace vkgmm
