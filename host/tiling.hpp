// Turning a TilingChoice into the kernel shape that runs (internal).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "vkgmm/context.hpp"
#include "vkgmm/types.hpp"

namespace vkgmm {

// The least power of two at or above x (1 for x <= 1): tiles shrink to the problem's.
int64_t pow2_at_least(int64_t x);

// A kernel's output block [rows, cols], reduced `step` at a time, and how invocations cover the block:
// TX x TY invocations, each holding RM x RN fp32 accumulators.
struct KernelShape {
  uint32_t rows = 0, step = 0, cols = 0;
  uint32_t tx = 0, ty = 0, rm = 0, rn = 0;
  // The direct schedule's K slices (gmm on GPUs): slices sets of TX x TY invocations, each reducing every
  // slices-th iteration of its K walk (steps_in_flight steps), summed in shared memory (shared_a floats)
  // before the store.
  uint32_t slices = 1;
  // The direct schedule's steps of its K walk per iteration, their loads issued together (gmm's
  // STEPS_IN_FLIGHT; make_kernel_shape).
  uint32_t steps_in_flight = 1;
  bool use_shared = false;
  uint32_t shared_a = 1, shared_b = 1;  // shared array lengths (1 when unused), per stage buffer
  // The shared schedules' stage buffers (STAGES): in the FMA builds the device class's
  // (DeviceClass::stage_buffers: 2 on AMD's and Intel's GPUs) where they all fit shared memory and each
  // invocation's chunks in flight stay within half the class's, else 1, as on NVIDIA's GPUs and CPU
  // devices; in the matrix builds 1 unless the options ask for 2 (make_matrix_shape).
  uint32_t stages = 1;
  // gmm's matrix schedule (use_shared too: its staging and fill visits are the shared schedule's): the
  // cooperative matrices' M x N x K and the block's subgroups, sg_m x sg_n (make_matrix_shape).
  bool matrix = false;
  uint32_t cm_m = 0, cm_n = 0, cm_k = 0, sg_m = 0, sg_n = 0;
  uint32_t invocations() const { return tx * ty * slices; }
};

// A bound on the loop iterations one invocation of a kernel of this shape runs to reduce `along`
// elements (gmm: k; tgmm: a group's rows): the K steps of the shared schedule with their staging and
// inner loops (`halves` of the block's columns staged: 2 with SwiGLU), or the direct schedule's steps of
// 1 or, with vec4, 4 elements (and its peeled ones; several steps in flight only take fewer). PlanCore::choose_grid
// needs it where a driver caps them.
uint64_t reduction_loop_iterations(const KernelShape& s, uint64_t along, uint32_t halves, bool vec4);
// llvmpipe (lavapipe) ends every loop of an invocation, silently, once the invocation has run 65535 loop
// iterations in all (Mesa's LP_MAX_TGSI_LOOP_ITERATIONS): a kernel that needs more would return partial
// results. On CPU devices, throws Error(unsupported) naming `what` when `iterations` exceed it; `remedy`
// says what the caller can do instead.
constexpr uint64_t kCpuLoopIterations = 65535;
inline constexpr const char* kSplitTheReduction =
    "split the reduction: calls over slices of it accumulate through existing_out";
void check_cpu_loop_budget(const DeviceInfo& info, const char* op, uint64_t iterations, const std::string& what,
                           const char* remedy = kSplitTheReduction);
// The same check's message, empty where the iterations fit (for a refusal made later, at record time).
std::string cpu_loop_budget_error(const DeviceInfo& info, const char* op, uint64_t iterations, const std::string& what,
                                  const char* remedy = kSplitTheReduction);

// The rows of the active groups, for gmm's automatic choice of the m tile.
struct ActiveGroups {
  const std::vector<int32_t>* sizes = nullptr;  // all G groups
  int64_t offset = 0, count = 0;
};

// The tiling the caller asked for (tuple, lookup, or `automatic()` when neither is set), checked
// positive. `op` names the op in errors.
Tiling resolve_tiling(const TilingChoice& choice, int64_t m, int64_t k, int64_t n, const char* op,
                      const std::function<Tiling()>& automatic);

// gmm's automatic tiling: the m tile that computes the fewest rows in all over the active groups (see
// pick_tm), and with rhs [k, n] (rhs_rows_contiguous) the n tile that streams whole weight rows when
// visits are a few rows each (decode).
// halves: accumulator sets per output column (2 for SwiGLU), which share the shared schedule's register tile.
// rhs_blocks: rhs in a block format (decoded where it is read).
Tiling gmm_auto_tiling(Schedule schedule, const DeviceInfo& info, const ActiveGroups& groups, bool rhs_rows_contiguous,
                       int64_t n, uint32_t halves = 1, bool rhs_blocks = false);

// What the automatic tiling takes for the group sizes of a call routed by expert ids (the ids stay on
// the device): each expert's rows when T tokens each choose top_k distinct experts of num_experts
// uniformly are Binomial(T, top_k / num_experts); routers concentrate, so the experts are taken as half
// as many (Binomial(T, 2 top_k / num_experts)), given as 64 sizes at the distribution's quantiles, so
// that pick_tm weighs each m tile by its expected cost. At decode most experts hold 0 to 3 rows, which
// the mean spread over every expert hides: the slots over E_local rounded up (what device group sizes
// without a hint get) picked 4-row visits for ids-decode's 2.2 rows per chosen expert, and for a window
// of 19 of 128 experts counted every slot as local.
std::vector<int32_t> routed_expected_sizes(int64_t tokens, int64_t top_k, int64_t num_experts);

// What the automatic tiling takes for group sizes on the device (unrouted), one value per local group:
// every group `hint` rows where the app gives one (device_group_sizes.expected_rows); else the rows
// spread over the groups at random, each Binomial(rows, 1 / groups), at the distribution's quantiles. The
// spread, not the mean: a decode of 16 rows over 8 groups holds groups of 0 to 5 rows, which 2-row
// tiles would visit up to 3 times, each visit streaming the group's weights.
std::vector<int32_t> device_expected_sizes(int64_t rows, int64_t groups, int64_t local_groups, int64_t hint);

// `samples` values of Binomial(trials, p) at its quantiles (q + 1/2) / samples, in ascending order.
std::vector<int32_t> binomial_quantiles(int64_t trials, double p, int64_t samples);

// tgmm's tiling tuple (tm, tk, tn), by what each means: an output block of block_k x block_n per
// workgroup, reduced over its group's rows rows_per_step at a time.
struct TgmmTiles {
  int64_t rows_per_step = 0, block_k = 0, block_n = 0;
  static TgmmTiles of(const Tiling& t) { return {t.tm, t.tk, t.tn}; }
  Tiling tiling() const { return {rows_per_step, block_k, block_n}; }
};
TgmmTiles tgmm_auto_tiles(Schedule schedule, const DeviceInfo& info, bool lhs_mk, int64_t n);

// The shared schedule's register tile per invocation (rows x columns, multiples of 4), from the device's
// register file (DeviceInfo::vector_registers).
struct RegisterTile {
  uint32_t rows = 0, cols = 0;
};
RegisterTile shared_register_tile(const DeviceInfo& info);

// A group's visits of tm rows (make_gmm_visits): ceil(rows / tm).
inline int64_t visits_of(int64_t rows, int64_t tm) { return (rows + tm - 1) / tm; }
// The cost of a group's visits in rows' worth: each visit tm rows plus a fixed overhead of `overhead` rows'
// worth (loading the group's weights).
inline int64_t visits_cost(int64_t rows, int64_t tm, int64_t overhead) { return visits_of(rows, tm) * (tm + overhead); }
// The m tile (a power of two from `smallest` to `largest`) that minimises the visits' cost over the
// active groups (the work: on CPU devices, and where the groups are estimates); ties go to the smaller
// tile. A GPU's shared and matrix schedules weigh the waves as well (gmm_tile_heights.hpp).
int64_t pick_tm(const ActiveGroups& groups, int64_t smallest, int64_t largest, int64_t overhead);
// The m tiles gmm's automatic tiling picks among on the shared and matrix schedules (pick_tm's bounds and
// each visit's overhead in rows), which gmm_tile_heights also takes.
struct MTileRange {
  int64_t smallest = 1, largest = 1, overhead = 0;
};
MTileRange gmm_m_tile_range(Schedule schedule, const DeviceInfo& info);

// The problem's schedule: `forced` (ContextOptions::schedule) when not automatic, else `requested`,
// else by device type.
Schedule resolve_schedule(Schedule requested, const DeviceInfo& info, Schedule forced);
// gmm's schedule: resolve_schedule's, except that when neither the problem nor the context forces one
// and the tiling is automatic, a GPU's groups of a few rows (decode: at most kGpuDecodeRows on average
// over the non-empty active groups) take the direct schedule with K slices. The shared schedule would
// stage a tile of 16 rows or more for them, and its grid (a workgroup per visit and 128 columns) leaves
// most of a GPU idle while each workgroup walks all of K.
constexpr int64_t kGpuDecodeRows = 8;
Schedule gmm_schedule(Schedule requested, const DeviceInfo& info, Schedule forced, const ActiveGroups& groups,
                      bool automatic_tiling);

// rows/cols: the output block; step: the reduction step; extents: the problem's sizes along each, used to
// shrink tiles larger than the problem (to a power of two, so pipelines stay few; a tile the caller or
// gmm_auto_tiling sized to the problem, such as a decode tile of n columns, is kept). col_group / row_group:
// columns / rows an invocation owns side by side (4 for vec4 loads along them, else 1); RN / RM is a
// multiple of it. halves: accumulator sets per output column (2 for gmm's SwiGLU: gate and up), which
// multiply the accumulators and the staged rhs columns. The shared schedule always owns groups of 4 rows
// and columns (16-byte shared-memory reads), steps a multiple of 4, and gives each invocation at most
// shared_register_tile()'s accumulators where the tile allows.
// k_walk: where set, the direct schedule may split the reduction over K slices of the workgroup (gmm's
// shader has them), which it does on GPUs (never on CPU devices) up to kSliceInvocations invocations, the
// slices' sums within half the shared memory, each slice taking whole iterations of the walk
// (steps_in_flight steps of k_walk's) and at least its least_slice_values (two of the table's steps: one
// wide step of q2_K's).
constexpr uint32_t kSliceInvocations = 256;
// One step of the direct schedule's walk along K, as gmm's sliced GPU decode sees it when it picks its
// steps in flight (KernelShape::steps_in_flight): the step's values of K and, per rhs column, the bytes of
// weights it reads and the 32-bit registers it holds until its FMAs.
struct KWalkStep {
  uint32_t values = 4;            // a quad; a block format's walk step (Q_STEP_VALUES * VKGMM_WIDE_PARTS)
  double column_bytes = 16;       // bytes of weights per column and step
  uint32_t column_registers = 4;  // per column and step: its values, or a block's quant words and scales
  bool blocks = false;            // a block format's walk, whose lhs is loaded a quad at a time in the step
  uint32_t most_steps = 4;        // the most steps in flight the kernel takes
  uint32_t least_slice_values = 8;  // the fewest values a K slice takes: two of the table's steps
};
// The walk of gmm over `rhs` (rhs_nk: stored [n, k]; vec4: the kernel loads 4 elements at a time, else
// one at a time with one step in flight): an element type's quads, a block format's steps along [n, k]
// rows from interface.h's table, or blocks along n read a quad at a time and one step in flight.
KWalkStep k_walk_step(DType rhs, bool rhs_nk, bool vec4);
// gmm's sliced GPU decode doubles its steps in flight (up to most_steps) until each invocation's weights
// per iteration (its rn x halves columns' bytes) reach kDecodeBytesInFlight, as long as the registers
// they hold stay within the device class's decode_load_floats and k is a multiple of the iteration. The
// weights stream from memory; lhs's few rows are read by every column's invocations, from the cache.
constexpr uint32_t kDecodeBytesInFlight = 128;
// That rule for a shape of rm rows and rn columns per invocation (host/tiling_k_walk.cpp).
uint32_t gpu_decode_steps_in_flight(const KernelShape& s, const KWalkStep& w, int64_t k, uint32_t halves,
                                    uint32_t most_floats);
// stage_buffers: the shared schedule's stage buffers it takes where they fit (KernelShape::stages); 0: the
// device class's.
KernelShape make_kernel_shape(int64_t rows, int64_t step, int64_t cols, int64_t rows_extent, int64_t step_extent,
                              int64_t cols_extent, Schedule schedule, const DeviceInfo& info, const char* op,
                              uint32_t col_group = 1, uint32_t row_group = 1, uint32_t halves = 1,
                              const KWalkStep* k_walk = nullptr, uint32_t stage_buffers = 0);
// The matrix schedule (shaders/matrix_tile.glsl) on `info`'s matrix units (DeviceInfo::matrix_m, n, k):
// the block [rows, cols] (cols output columns, `halves` product columns each) shrunk to the problem's
// extents as make_kernel_shape does and rounded up to whole matrices, over the device class's subgroups (fewer
// where the device's workgroups hold fewer) split between rows and columns so that each subgroup's part is
// as near square as whole matrices allow; the step a multiple of the matrices' K and of 4, halved until the
// f16 stage (rhs's twice over for a block format, `rhs_blocks`: its rounding and the rest), the
// accumulators' way out and the chunks in flight fit; and the block's longer side halved until each
// subgroup holds at most the class's accumulator matrices and the stage fits. Throws Error(unsupported)
// where not even one matrix per subgroup can be staged. Its stage buffers: stage_buffers (the options')
// where they all fit shared memory at that block and step, else 1.
KernelShape make_matrix_shape(int64_t rows, int64_t step, int64_t cols, int64_t rows_extent, int64_t step_extent,
                              int64_t cols_extent, const DeviceInfo& info, const char* op, uint32_t halves,
                              bool rhs_blocks, uint32_t stage_buffers = 0);

}  // namespace vkgmm
