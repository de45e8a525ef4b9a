// Tiling resolution, schedule choice and the mapping of a tile onto invocations.
#include "tiling.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <climits>
#include <functional>
#include <numeric>
#include <string>

#include "device_class.hpp"
#include "interface.hpp"
#include "options.hpp"

namespace vkgmm {

int64_t pow2_at_least(int64_t x) {
  int64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

const char* schedule_name(Schedule s) {
  const char* name = choice_name(kSchedules, s);
  return name ? name : "?";
}

namespace {

// Appended piece by piece: GCC 12 warns (-Wrestrict, wrongly) where a literal is prepended to a temporary.
std::string tiling_text(const Tiling& t) {
  std::string s = "(";
  s += std::to_string(t.tm);
  s += ", ";
  s += std::to_string(t.tk);
  s += ", ";
  s += std::to_string(t.tn);
  s += ")";
  return s;
}

// Accumulators one invocation may hold before the kernel spills hopelessly.
constexpr uint32_t kMaxAccumulators = 256;

// What a gmm visit costs beyond its rows, in rows (see resolve_tiling): the direct schedule's, measured on
// lavapipe; and the shared schedule's, a GPU's, not measured: what a visit costs besides its loop, its
// group's weights read once per visit (a 32-row tile reads them 4 times as often per row as a 128-row
// one). It keeps 128-row tiles for groups of a few hundred rows and small tiles for few-row (decode) visits.
constexpr int64_t kVisitOverheadRows = 2;
constexpr int64_t kSharedVisitOverheadRows = 64;
// A GPU decode visit's, not measured: each visit streams its group's weights from memory (a 32-column
// tile's k x 32 values), where a row more costs its k values of lhs from cache and FMAs the bandwidth
// hides. Large enough that groups of up to kGpuDecodeRows rows take one visit each, their weights read
// once, where they are alike: one tile height serves every group, so beside many 1-row groups an 8-row
// group may still take two 4-row visits.
constexpr int64_t kGpuDecodeVisitOverheadRows = 64;

// Registers an invocation needs beside its accumulators in the shared schedule: the K step's operands
// (4 + 4 vec4s), the next step's chunks in flight (4 vec4s at 128 x 128) and addresses, as ACO allocated
// them (112 registers for 64 accumulators).
constexpr uint32_t kSharedOverheadRegisters = 48;

uint32_t round_up4(int64_t x) { return static_cast<uint32_t>((std::max<int64_t>(x, 1) + 3) / 4 * 4); }

}  // namespace

RegisterTile shared_register_tile(const DeviceInfo& info) {
  // The device class's tile where its row names one (host/device_class.cpp: CPU drivers 4 x 4, NVIDIA
  // 8 x 8, Intel's Xe-HPG and Xe2 4 x 8). Else an 8 x 8 tile (64 accumulators, 4 16-byte shared reads per
  // 64 FMAs) where the register file holds it at 2 waves per SIMD; 8 x 4, then 4 x 4 on smaller files. Two
  // waves is the floor, not four: on GCN (256 registers per lane), 4 waves leave 64 registers, which hold no more than a 4 x 4
  // tile beside the stage's operands and prefetch, and that tile's inner loop stays near 65 % FMAs; an
  // 8 x 8 tile's 64 independent FMAs per K step hide latency within the wave. Devices that do not say get
  // 8 x 8 (they allow 255 registers per invocation or more).
  const DeviceClass& row = device_class(info);
  if (row.tile_rows && row.tile_cols) return {row.tile_rows, row.tile_cols};
  if (info.vector_registers == 0) return {8, 8};
  const uint32_t per_wave = info.vector_registers / 2;
  if (64 + kSharedOverheadRegisters <= per_wave) return {8, 8};
  if (32 + kSharedOverheadRegisters <= per_wave) return {8, 4};
  return {4, 4};
}

Schedule resolve_schedule(Schedule requested, const DeviceInfo& info, Schedule forced) {
  checked_choice(kSchedules, requested, "schedule");
  if (forced != Schedule::automatic) return forced;
  if (requested != Schedule::automatic) return requested;
  // Measured on lavapipe: shared-memory staging and barriers cost more than they save on a CPU.
  return info.type == VK_PHYSICAL_DEVICE_TYPE_CPU ? Schedule::direct : Schedule::shared;
}

bool few_rows_per_group(const ActiveGroups& groups) {
  int64_t rows = 0, busy = 0;
  for (int64_t g = groups.offset; g < groups.offset + groups.count; ++g)
    if ((*groups.sizes)[g] > 0) rows += (*groups.sizes)[g], ++busy;
  return busy > 0 && rows <= kGpuDecodeRows * busy;
}

Schedule gmm_schedule(Schedule requested, const DeviceInfo& info, Schedule forced, const ActiveGroups& groups,
                      bool automatic_tiling) {
  const Schedule resolved = resolve_schedule(requested, info, forced);
  if (requested != Schedule::automatic || forced != Schedule::automatic || !automatic_tiling ||
      info.type == VK_PHYSICAL_DEVICE_TYPE_CPU)
    return resolved;
  return few_rows_per_group(groups) ? Schedule::direct : resolved;
}

uint64_t reduction_loop_iterations(const KernelShape& s, uint64_t along, uint32_t halves, bool vec4) {
  auto up = [](uint64_t a, uint64_t b) { return (a + b - 1) / b; };
  if (!s.use_shared) return vec4 ? up(up(along, 4), s.slices) + 8 : up(along, s.slices) + 1;
  const uint64_t inv = s.invocations();
  const uint64_t per_step = up(uint64_t(s.rows) * s.step, inv) + up(uint64_t(s.step) * s.cols * halves, inv) + s.step + 1;
  return up(along, s.step) * per_step;
}

std::string cpu_loop_budget_error(const DeviceInfo& info, const char* op, uint64_t iterations, const std::string& what,
                                  const char* remedy) {
  if (info.type != VK_PHYSICAL_DEVICE_TYPE_CPU || iterations <= kCpuLoopIterations) return {};
  return std::string(op) + ": " + what + " takes " + std::to_string(iterations) +
         " loop iterations in one invocation; CPU drivers such as lavapipe end an invocation's loops after " +
         std::to_string(kCpuLoopIterations) + " and would return partial results (" + remedy + ")";
}

void check_cpu_loop_budget(const DeviceInfo& info, const char* op, uint64_t iterations, const std::string& what,
                           const char* remedy) {
  const std::string error = cpu_loop_budget_error(info, op, iterations, what, remedy);
  if (!error.empty()) throw Error(Status::unsupported, error);
}

int64_t pick_tm(const ActiveGroups& groups, int64_t smallest, int64_t largest, int64_t overhead) {
  int64_t best_tm = largest, best_cost = INT64_MAX;
  for (int64_t tm = smallest; tm <= largest; tm *= 2) {
    int64_t cost = 0;
    for (int64_t g = groups.offset; g < groups.offset + groups.count; ++g)
      cost += visits_cost((*groups.sizes)[g], tm, overhead);
    if (cost < best_cost) best_cost = cost, best_tm = tm;
  }
  return best_tm;
}

MTileRange gmm_m_tile_range(Schedule schedule, const DeviceInfo& info) {
  if (schedule == Schedule::matrix)
    return {std::max<int64_t>(16, info.matrix_m), device_class(info).matrix_rows, kSharedVisitOverheadRows};
  return {16, 16 * int64_t(shared_register_tile(info).rows), kSharedVisitOverheadRows};
}

Tiling resolve_tiling(const TilingChoice& choice, int64_t m, int64_t k, int64_t n, const char* op,
                      const std::function<Tiling()>& automatic) {
  Tiling t;
  if (choice.fixed) {
    t = *choice.fixed;
  } else if (choice.lookup) {
    std::optional<Tiling> found = choice.lookup(m, k, n);
    if (!found)
      throw Error(Status::invalid_argument, std::string(op) + ": tiling: the lookup function has no tiling for (m, k, n) = (" +
                                                std::to_string(m) + ", " + std::to_string(k) + ", " +
                                                std::to_string(n) + ")");
    t = *found;
  } else {
    t = automatic();
  }
  if (t.tm <= 0 || t.tk <= 0 || t.tn <= 0)
    throw Error(Status::invalid_argument,
                std::string(op) + ": tiling " + tiling_text(t) + " must have positive tm, tk and tn");
  return t;
}

// Direct schedule: 128 x 128 output blocks, 16 x 16 accumulators per invocation (the K step is unused).
// Shared schedule: 16 x 16 invocations of shared_register_tile() each, 16-deep shared stages.
Tiling gmm_auto_tiling(Schedule schedule, const DeviceInfo& info, const ActiveGroups& groups, bool rhs_rows_contiguous,
                       int64_t n, uint32_t halves, bool rhs_blocks) {
  // A group's last tile is ragged and costs a whole tile: size the tile to the groups (decode,
  // fine-grained experts). With the inputs read through texel views, a visit costs about 2 rows'
  // worth beyond its rows on lavapipe (the overhead that picks the m tile measured fastest on moe-fine
  // and moe-prefill); the shared schedule wants at least 16 rows per tile.
  // Matrix: the device class's block (product columns), its rows sized to the groups.
  const DeviceClass& row = device_class(info);
  if (schedule != Schedule::direct) {
    const MTileRange m = gmm_m_tile_range(schedule, info);
    const int64_t step = schedule == Schedule::matrix ? row.matrix_step : row.shared_step;
    const int64_t cols = schedule == Schedule::matrix
                             ? row.matrix_cols / halves
                             : 16 * std::max<int64_t>(4, shared_register_tile(info).cols / halves);
    return {pick_tm(groups, m.smallest, m.largest, m.overhead), step, cols};
  }
  // Direct on a GPU for groups of a few rows (gmm_schedule's decode): tiles of the visit's rows and 32 columns, a
  // workgroup each, their K split over slices of the workgroup (make_kernel_shape): a decode's weights
  // streamed by visits x n / 32 workgroups of up to kSliceInvocations invocations.
  // Elsewhere (a direct schedule forced on a GPU's larger groups) the tiles below, their K sliced too.
  if (info.type != VK_PHYSICAL_DEVICE_TYPE_CPU && few_rows_per_group(groups))
    return {pick_tm(groups, 1, kGpuDecodeRows, kGpuDecodeVisitOverheadRows), 4, 32};
  Tiling t{128, 4, 128};
  // Direct: at most 32 rows (more measured no faster). With rhs [n, k], 32-row tiles get 64 columns,
  // so each invocation holds 32 rows x 8 columns instead of 16 x 16 (make_kernel_shape) and each load
  // of rhs serves twice the rows: measured on lavapipe on moe-prefill's shape, (32, 64) is faster than
  // (32, 128) with rhs [n, k] in f32 and bf16; with rhs [k, n] it is even in f32 and slower in bf16 (each
  // row's 16-bit lhs decoded for half the columns), so [k, n] keeps 128 columns.
  // Block formats keep 128 columns (16 x 16 per invocation): each column's block walk (its texels, the
  // selects that place its words) is then shared by 16 rows and the lhs loads by 16 columns, measured
  // faster than 32 x 8 on lavapipe for q8_0 and q4_K on moe-prefill's shape.
  t.tm = pick_tm(groups, 1, 32, kVisitOverheadRows);
  t.tn = t.tm >= 32 && !rhs_rows_contiguous && !rhs_blocks ? 64 : 128;
  // Narrower rows get the multiple of 32 columns that covers them with the least surplus: a CPU driver
  // runs the lanes past n too (loads clamped, stores skipped), and Qwen3's down-projection backward (n =
  // 96 per slot) measured 1.27x faster in 96 columns than in 128 on lavapipe. 96 columns also where they
  // cover a row in fewer columns than 128 do (192 in two tiles of 96). SwiGLU's halves and block formats
  // (16 x 16 per invocation, above) keep 128.
  if (t.tn == 128 && halves == 1 && !rhs_blocks) {
    if (n < 128) t.tn = std::max<int64_t>(32, (n + 31) / 32 * 32);
    else if ((n + 95) / 96 * 96 < (n + 127) / 128 * 128) t.tn = 96;
  }
  // Visits of a few rows each stream their weights and reuse little of them: there, one workgroup
  // reading whole rows of rhs [k, n] is faster than 128-column slices (measured on lavapipe, m = 16,
  // G = 8, k x n from 1024 x 1024 to 4096 x 256). Rows of more than 1024 columns cannot be one tile
  // (accumulators): there 128 columns stay, which measured faster than 1024-column tiles at 256 x 4096.
  // At most 2 rows per visit with tiles of 512 columns or more (accumulators again; also measured faster
  // than 4 there). 4-row visits over 512-column tiles, which read an expert chosen by 3-4 tokens once
  // instead of twice, measured sometimes faster and sometimes slower on lavapipe, whose LLVM computes a
  // visit's rows past its group anyway (both sides of a branch run, masked): not taken.
  // The tile is the row itself, to a multiple of 32 columns (the 8 lanes' 4-column groups cover it
  // exactly; with SwiGLU's two accumulator halves 16 lanes, so an odd multiple of 32 gets 32 columns
  // more), not the next power of two: a CPU driver runs the lanes past n too (their loads clamped, their
  // stores skipped), so a power of two would do up to twice the work (Qwen3's n = 768 in 1024 columns).
  if (rhs_rows_contiguous && t.tm <= 4 && n <= 1024) {
    t.tn = std::max<int64_t>(128, (n + 31) / 32 * 32);
    t.tm = pick_tm(groups, 1, t.tn >= 512 ? 2 : 4, kVisitOverheadRows);
  }
  return t;
}

std::vector<int32_t> binomial_quantiles(int64_t trials, double p, int64_t samples) {
  std::vector<int32_t> sizes(size_t(std::max<int64_t>(samples, 0)), 0);
  const auto clamp32 = [](int64_t r) { return static_cast<int32_t>(std::min<int64_t>(r, INT32_MAX)); };
  if (trials <= 0 || p <= 0.0 || samples <= 0) return sizes;
  if (p >= 1.0) return std::vector<int32_t>(size_t(samples), clamp32(trials));
  // The CDF walked up from 8 standard deviations below the mean (what lies below is under 1e-7 where p
  // is near 1, far less where it is small), each sample taking the rows where the CDF reaches its
  // quantile (q + 1/2) / samples: the walk ends a few standard deviations past the mean, about 10 standard
  // deviations in all (some 130,000 steps for a billion trials over 4 groups).
  const double T = double(trials), mean = T * p, sd = std::sqrt(T * p * (1.0 - p));
  int64_t q = 0;
  double cdf = 0.0;
  for (int64_t r = std::max<int64_t>(0, int64_t(mean - 8.0 * sd)); r <= trials && q < samples; ++r) {
    const double log_pmf = std::lgamma(T + 1) - std::lgamma(double(r) + 1) - std::lgamma(T - double(r) + 1) +
                           double(r) * std::log(p) + (T - double(r)) * std::log1p(-p);
    cdf += std::exp(log_pmf);
    for (; q < samples && (r == trials || cdf >= (double(q) + 0.5) / double(samples)); ++q) sizes[size_t(q)] = clamp32(r);
  }
  return sizes;
}

std::vector<int32_t> routed_expected_sizes(int64_t tokens, int64_t top_k, int64_t num_experts) {
  constexpr int64_t kSamples = 64;
  // Routers concentrate tokens on fewer experts than uniform choice would: the bench's router (each
  // expert a fixed popularity) chooses 5 of ids-decode's 8 experts where uniform routing would choose
  // 7.2, and 31 of qwen3-ids-t8's 128 where it would choose 51.6. Taken as half the experts carrying
  // the slots. Measured on qwen3-ids-t8: 1-row visits (uniform's choice) 1.4-1.75x slower than 2-row
  // ones in 3 of 4 alternated runs.
  constexpr double kRouterConcentration = 2.0;
  if (tokens <= 0 || top_k <= 0 || num_experts <= 0) return std::vector<int32_t>(kSamples, 0);
  return binomial_quantiles(tokens, std::min(1.0, kRouterConcentration * double(top_k) / double(num_experts)), kSamples);
}

std::vector<int32_t> device_expected_sizes(int64_t rows, int64_t groups, int64_t local_groups, int64_t hint) {
  const int64_t n = std::max<int64_t>(local_groups, 0);
  if (hint > 0) return std::vector<int32_t>(size_t(n), static_cast<int32_t>(std::min<int64_t>(hint, INT32_MAX)));
  if (groups <= 0) return std::vector<int32_t>(size_t(n), 0);
  std::vector<int32_t> sizes = binomial_quantiles(rows, 1.0 / double(groups), n);
  // Few rows over a window of many groups may leave every quantile at 0: the rows that do come land in
  // some group, and the tiles are sized for one at least.
  if (rows > 0 && !sizes.empty() && sizes.back() == 0) sizes.back() = 1;
  return sizes;
}

// tgmm's output block is [block_k, block_n], walking its group's rows rows_per_step at a time: the
// same shapes as gmm's defaults with the roles of tm and tk swapped. Direct schedule: with lhs [k, m]
// a 128 x 128 block; with lhs [m, k] a 32 x 128 block where n fills it, else 64 x 64 (measured on
// lavapipe, min of alternating runs: 32 x 128 took 0.75-0.9x the time of 64 x 64 at m = 1024-8192,
// k = 176-1024, n = 256-3584, and tied at k = 1792, n = 512).
TgmmTiles tgmm_auto_tiles(Schedule schedule, const DeviceInfo& info, bool lhs_mk, int64_t n) {
  // Matrix: gmm's blocks, the group's rows a matrix step at a time.
  const DeviceClass& row = device_class(info);
  if (schedule == Schedule::matrix)
    return {/*rows_per_step=*/row.matrix_step, /*block_k=*/row.matrix_rows, /*block_n=*/row.matrix_cols};
  if (schedule != Schedule::direct) {
    const RegisterTile r = shared_register_tile(info);
    return {/*rows_per_step=*/row.shared_step, /*block_k=*/16 * r.rows, /*block_n=*/16 * r.cols};
  }
  if (!lhs_mk) return {4, 128, 128};
  if (n >= 128) return {4, 32, 128};
  return {4, 64, 64};
}

namespace {

std::string accumulators_error(const char* op, int64_t rows, int64_t cols, uint32_t needed) {
  return std::string(op) + ": tiling: a " + std::to_string(rows) + " x " + std::to_string(cols) +
         " output tile needs " + std::to_string(needed) + " accumulators per invocation (at most " +
         std::to_string(kMaxAccumulators) + "): use smaller tiles";
}

// The shared schedule's mapping: invocations of groups of 4 rows and columns, each up to the register
// tile, as many as the tile needs (within the device's limit); a step of whole 4-element chunks whose
// stage fits half the device's shared memory (two workgroups resident), else all of it.
KernelShape make_shared_shape(KernelShape s, int64_t rows, int64_t step, int64_t cols, const DeviceInfo& info,
                              const char* op, uint32_t halves, uint32_t stage_buffers) {
  const RegisterTile tile = shared_register_tile(info);
  // Tiles of under 32 rows take 4 rows per invocation: each invocation stages TK * RM * RN / (4 * rows)
  // rhs chunks per step, and 8 rows of a 16-row tile made that 8-16 chunks in flight (spills on gfx1100);
  // these are the few-row (decode) visits. 32-row tiles take the whole register tile, with a shorter
  // step (below): for qwen3-ids-t512's 32 rows per expert, gpu-report counts over 80 % FMAs in the main
  // loop with 8 x 8 per invocation, near 60 % with 4 x 8.
  s.rm = std::min(rows < 32 ? 4u : tile.rows, round_up4(rows));
  // SwiGLU's two halves share the tile's columns.
  s.rn = std::min(std::max(4u, tile.cols / halves), round_up4(cols));
  auto cover = [&] {
    s.ty = static_cast<uint32_t>((rows + s.rm - 1) / s.rm);
    s.tx = static_cast<uint32_t>((cols + s.rn - 1) / s.rn);
  };
  cover();
  while (uint64_t(s.tx) * s.ty > info.max_workgroup_invocations) {
    if (s.rm <= s.rn) s.rm *= 2;
    else s.rn *= 2;
    cover();
  }
  if (s.rm * s.rn * halves > kMaxAccumulators)
    throw Error(Status::invalid_argument, accumulators_error(op, rows, cols, s.rm * s.rn * halves));
  s.rows = s.ty * s.rm;
  s.cols = s.tx * s.rn;
  const uint64_t per_step = (uint64_t(s.rows) + uint64_t(s.cols) * halves) * sizeof(float);
  uint64_t fit = info.max_shared_memory / 2 / per_step / 4 * 4;
  if (fit < 4) fit = info.max_shared_memory / per_step / 4 * 4;
  if (fit < 4)
    throw Error(Status::unsupported, std::string(op) + ": tiling: a " + std::to_string(rows) + " x " +
                                         std::to_string(cols) + " tile cannot be staged in " +
                                         std::to_string(info.max_shared_memory) + " bytes of shared memory");
  s.step = static_cast<uint32_t>(std::min<uint64_t>(round_up4(step), fit));
  // The next step's chunks are held in registers while the current one computes: at most
  // the device class's chunks in flight per invocation, halving the step (whole chunks) until they fit.
  const uint64_t most_in_flight = device_class(info).chunks_in_flight;
  auto in_flight = [&](uint64_t st) { return ((uint64_t(s.rows) + uint64_t(s.cols) * halves) * st / 4 + s.invocations() - 1) / s.invocations(); };
  while (s.step > 4 && in_flight(s.step) > most_in_flight) s.step = round_up4(s.step / 2);
  s.shared_a = s.rows * s.step;
  s.shared_b = s.step * s.cols * halves;
  // Two buffers where the class (or the options) takes them, both fit beside the kernel's few other words
  // (64 bytes), and each invocation holds at most half the chunks in flight the class allows: the two-buffer
  // loop keeps more registers live, and ACO (gfx1100) spilled a 64-row tile's (128 invocations, 6 chunks each).
  const uint64_t stage_bytes = (uint64_t(s.shared_a) + s.shared_b) * sizeof(float);
  const uint32_t buffers = stage_buffers ? stage_buffers : device_class(info).stage_buffers;
  if (buffers > 1 && buffers * stage_bytes + 64 <= info.max_shared_memory && 2 * in_flight(s.step) <= most_in_flight)
    s.stages = buffers;
  return s;
}

}  // namespace

KernelShape make_kernel_shape(int64_t rows, int64_t step, int64_t cols, int64_t rows_extent, int64_t step_extent,
                              int64_t cols_extent, Schedule schedule, const DeviceInfo& info, const char* op,
                              uint32_t col_group, uint32_t row_group, uint32_t halves, const KWalkStep* k_walk,
                              uint32_t stage_buffers) {
  KernelShape s;
  s.use_shared = schedule == Schedule::shared;
  // A tile larger than the problem only wastes work: shrink it to the problem's next power of two. The
  // shared schedule keeps 16 rows at least: with fewer, each invocation stages a quarter of the rhs stage
  // or more and the compiled code spills (ACO, 8-row tiles: 152 VGPRs and 144 spilled SGPRs on navi21).
  rows = std::min(rows, pow2_at_least(std::max<int64_t>(rows_extent, s.use_shared ? 16 : 1)));
  cols = std::min(cols, pow2_at_least(std::max<int64_t>(cols_extent, 1)));
  step = std::min(step, pow2_at_least(std::max<int64_t>(step_extent, 1)));
  if (rows > 65536 || cols > 65536 || step > 65536)
    throw Error(Status::invalid_argument, std::string(op) + ": tiling: tile sizes above 65536 cannot run");
  if (s.use_shared) return make_shared_shape(s, rows, step, cols, info, op, halves, stage_buffers);
  // Invocations: the direct schedule puts the 8 lanes of a SIMD group along the columns (measured best
  // on lavapipe) and gives each invocation as many rows as its accumulators allow with its columns (at
  // least 16: 32 rows with 8 columns each, 16 with 16), so short tiles keep their rows in one invocation
  // and every load is reused across them.
  const uint32_t lanes = 8;
  const int64_t col_units = (cols + col_group - 1) / col_group;
  s.tx = static_cast<uint32_t>(std::min<int64_t>(col_units, lanes));
  const int64_t cols_per_lane = std::max<int64_t>(1, (cols + s.tx - 1) / s.tx);
  const int64_t rows_per_lane = std::max<int64_t>(16, kMaxAccumulators / cols_per_lane);
  s.ty = static_cast<uint32_t>(std::clamp<int64_t>(rows / rows_per_lane, 1, lanes));
  while (s.tx * s.ty > info.max_workgroup_invocations) s.ty = std::max(1u, s.ty / 2);
  const int64_t row_units = (rows + row_group - 1) / row_group;
  auto per_invocation = [&] {
    s.rm = static_cast<uint32_t>((row_units + s.ty - 1) / s.ty) * row_group;
    s.rn = static_cast<uint32_t>((col_units + s.tx - 1) / s.tx) * col_group;
  };
  per_invocation();
  // A tile too large for the accumulators one invocation may hold gets more invocations, up to the
  // device's limit, before it is refused.
  while (s.rm * s.rn * halves > kMaxAccumulators && s.tx * s.ty * 2 <= info.max_workgroup_invocations) {
    const bool grow_y = s.rm >= s.rn ? s.ty < row_units : !(s.tx < col_units);
    if (grow_y && s.ty < row_units) s.ty *= 2;
    else if (s.tx < col_units) s.tx *= 2;
    else break;
    per_invocation();
  }
  // With row or column groups the tile is exactly what the invocations cover.
  s.rows = row_group > 1 ? s.ty * s.rm : static_cast<uint32_t>(rows);
  s.cols = col_group > 1 ? s.tx * s.rn : static_cast<uint32_t>(cols);
  if (s.rm * s.rn * halves > kMaxAccumulators)
    throw Error(Status::invalid_argument, accumulators_error(op, rows, cols, s.rm * s.rn * halves));
  // The direct schedule has no reduction step (it walks K, or tgmm's rows, 4 at a time): one value for
  // every requested step keeps its pipelines, and the tilings a sweep tries, distinct only where they differ.
  s.step = 4u;
  if (k_walk && info.type != VK_PHYSICAL_DEVICE_TYPE_CPU) {
    // A decode tile's block-format walk (a step of more than 4 values) holds each of its columns' step
    // words beside the accumulators (q6_K: 16 words per column): at most the device class's rows per
    // invocation, the tile's other rows on more invocations, whose loads of the same words hit the cache.
    const DeviceClass& row = device_class(info);
    while (k_walk->blocks && rows <= kGpuDecodeRows && s.rm > row.decode_walk_rows &&
           s.invocations() * 2 <= info.max_workgroup_invocations) {
      s.ty *= 2;
      s.rm = static_cast<uint32_t>((rows + s.ty - 1) / s.ty);
    }
    s.steps_in_flight = gpu_decode_steps_in_flight(s, *k_walk, step_extent, halves, row.decode_load_floats);
    const uint64_t slice_values =
        std::max(uint64_t(k_walk->values) * s.steps_in_flight, uint64_t(k_walk->least_slice_values));
    const uint64_t sums = uint64_t(s.rm) * s.rn * halves * s.invocations() * sizeof(float);  // one slice's
    const uint32_t most = std::min(kSliceInvocations, info.max_workgroup_invocations);
    while (uint64_t(s.invocations()) * 2 <= most && uint64_t(s.slices) * 2 * slice_values <= uint64_t(step_extent) &&
           sums * s.slices <= info.max_shared_memory / 2)
      s.slices *= 2;
    if (s.slices > 1) s.shared_a = static_cast<uint32_t>(sums / sizeof(float) * (s.slices / 2));
    else s.steps_in_flight = 1;
  }
  return s;
}

}  // namespace vkgmm
