// `vkgmm run gmm|tgmm`: read .npy operands, run one grouped matmul on the device, write the result.
//
// Everything that can be checked from the files alone (flags, ranks, matching k / m / T, existing_out's
// shape, the ids' range, the shapes of weights and bias, an odd n with swiglu) is checked before the device
// is touched, with messages naming the CLI flag; the library's plan then checks the contract's rules
// (group sizes, offsets, tiling). The output is written last and atomically,
// so any failure, including a failed --check, leaves no output file.
//
// This file is the sequence of a run; its steps live apart: the command line (run_args), .npy files <->
// operands and buffers (run_operands), --check (run_check) and the output file (run_output).
#include "run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "fail.hpp"
#include "flags.hpp"
#include "run_args.hpp"
#include "run_check.hpp"
#include "run_operands.hpp"
#include "run_output.hpp"
#include "usage_error.hpp"
#include "vkgmm/context.hpp"
#include "vkgmm/ops.hpp"
#include "vkgmm/reference.hpp"
#include "vkgmm/types.hpp"

namespace {

using vkgmm::DType;
using tool::fail;

// --device-metadata: the problem with its group sizes moved to a device buffer (the library's device
// path), run with the tiling and schedule the host path's plan picked for those sizes, so that the output
// is the host path's bit for bit (an automatic tiling would size its tiles from an estimate instead of the
// sizes, and with a fixed tiling a GPU's automatic schedule no longer follows the groups' rows).
template <typename Problem, typename Plan>
Problem on_device(const Problem& p, const Plan& host_plan) {
  Problem q = p;
  q.tiling = vkgmm::TilingChoice::of(host_plan.tiling());
  q.schedule = host_plan.schedule();
  q.device_group_sizes.count = static_cast<int64_t>(p.group_sizes.size());
  q.group_sizes.clear();
  return q;
}

// The operands in device buffers of their own: lhs, rhs and existing_out (when given) as the plan's
// OperandSizes say, bias (gmm, when given), and the output (`out_bytes`, at least what the plan needs).
// The buffers live as long as this: past the run that reads them.
template <typename Operands>
struct Bound {
  Operands ops{};
  vkgmm::Buffer out;
  std::vector<vkgmm::Buffer> inputs;
};

template <typename Operands>
Bound<Operands> upload_operands(vkgmm::Context& ctx, const vkgmm::OperandSizes& sz, VkDeviceSize out_bytes,
                                const Operand& L, const Operand& R, const std::optional<Operand>& E,
                                const std::optional<Operand>& B) {
  Bound<Operands> b;
  b.out = ctx.create_buffer(std::max<VkDeviceSize>({4, sz.out, out_bytes}));
  b.inputs.push_back(upload(ctx, L, sz.lhs, "lhs"));
  b.ops.lhs = b.inputs.back().view();
  b.inputs.push_back(upload(ctx, R, sz.rhs, "rhs"));
  b.ops.rhs = b.inputs.back().view();
  b.ops.out = b.out.view();
  if (E) {
    b.inputs.push_back(upload(ctx, *E, sz.existing_out, "existing-out"));
    b.ops.existing_out = b.inputs.back().view();
  }
  if constexpr (std::is_same_v<Operands, vkgmm::GmmOperands>) {
    if (B) {
      b.inputs.push_back(upload(ctx, *B, B->bytes.size(), "bias"));
      b.ops.bias = b.inputs.back().view();
    }
  }
  return b;
}

// A one-word device buffer holding 0, for the status word of the device paths.
vkgmm::Buffer zero_word(vkgmm::Context& ctx) {
  vkgmm::Buffer word = ctx.create_buffer(4);
  const uint32_t zero = 0;
  word.upload(&zero, 4);
  return word;
}

// The status word after a run whose device-side inputs (sizes, ids) the host has checked: any bit set
// means the device did not take them as they are, which is the library's bug, not the caller's.
void expect_clean_status(const vkgmm::Buffer& status, const char* flag, const char* what) {
  uint32_t word = 0;
  status.download(&word, 4);
  if (word != 0)
    throw vkgmm::Error(vkgmm::Status::internal, std::string(flag) + ": the device status word is " +
                                                    std::to_string(word) + " for valid " + what);
}

// Uploads the operands, runs the problem once (submit and wait) and returns the output buffer: through
// `plan` (the host path, which has checked the problem, the group sizes included), or with
// --device-metadata through a device-path plan of the same problem, the sizes uploaded to a buffer.
template <typename Plan, typename Operands, typename Problem>
vkgmm::Buffer run_plan(vkgmm::Context& ctx, const Problem& p, const Plan& plan, bool device_metadata,
                       VkDeviceSize out_bytes, const Operand& L, const Operand& R, const std::optional<Operand>& E,
                       const std::optional<Operand>& B = std::nullopt) {
  Bound<Operands> b = upload_operands<Operands>(ctx, plan.sizes(), out_bytes, L, R, E, B);
  if (!device_metadata) {
    ctx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, b.ops); });
    return std::move(b.out);
  }
  const Plan device_plan(ctx, on_device(p, plan));
  const std::vector<int32_t>& gs = p.group_sizes;  // G >= 1: the host plan refuses G = 0
  vkgmm::Buffer sizes = ctx.create_buffer(gs.size() * 4), status = zero_word(ctx);
  sizes.upload(gs.data(), gs.size() * 4);
  b.ops.group_sizes = sizes.view();
  b.ops.status = status.view();  // no workspace view: the plan's own, where it has one
  ctx.submit_and_wait([&](VkCommandBuffer cb) { device_plan.record(cb, b.ops); });
  // the host plan accepted these sizes: the device must have taken them as they are
  expect_clean_status(status, "--device-metadata", "sizes");
  return std::move(b.out);
}

// gmm routed by expert ids: the ids (and the routing weights, when combined) uploaded to device buffers
// of their own, a status word, the plan's own workspace; returns the output buffer.
vkgmm::Buffer run_routed(vkgmm::Context& ctx, const vkgmm::GmmPlan& plan, VkDeviceSize out_bytes, const Operand& L,
                         const Operand& R, const std::optional<Operand>& E, const std::optional<Operand>& B,
                         const std::vector<int32_t>& ids, const std::optional<Operand>& W) {
  Bound<vkgmm::GmmOperands> b = upload_operands<vkgmm::GmmOperands>(ctx, plan.sizes(), out_bytes, L, R, E, B);
  vkgmm::Buffer id_buf = ctx.create_buffer(std::max<size_t>(4, ids.size() * 4)), status = zero_word(ctx);
  if (!ids.empty()) id_buf.upload(ids.data(), ids.size() * 4);
  b.ops.ids = id_buf.view();
  if (W) {
    b.inputs.push_back(upload(ctx, *W, W->bytes.size(), "weights"));
    b.ops.weights = b.inputs.back().view();
  }
  // As with device group sizes: a plan with nothing to run (T = 0) has no workspace and takes no status.
  if (plan.workspace_bytes() > 0) b.ops.status = status.view();  // no workspace view: the plan's own
  ctx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, b.ops); });
  expect_clean_status(status, "--ids", "ids");  // checked on the host: no id below -1 or past --num-experts
  return std::move(b.out);
}

// The fields gmm's and tgmm's problems share, from the shape and the command line (--group-offset is
// parsed here, before the inputs are converted: the order of the checks is the order of the messages).
template <typename Problem>
Problem common_problem(const Job& j, int64_t m, int64_t k, int64_t n, const std::vector<int32_t>& group_sizes) {
  Problem p;
  p.m = m;
  p.k = k;
  p.n = n;
  p.group_sizes = group_sizes;
  p.group_offset = optional_count(j.args, "group-offset", 0);
  p.out_type = j.out_type;
  p.tiling = j.tiling;
  return p;
}

// --check's scale (run_check.hpp) from the values the device saw.
CheckScale check_scale(DType lhs_type, DType rhs_type, DType out_type, int64_t reduction, const std::vector<float>& L,
                       const std::vector<float>& R) {
  return {lhs_type, rhs_type, out_type, reduction, largest_magnitude(L) * largest_magnitude(R)};
}

// The most a token's combined output sums of |weights| (its slots' results scaled and added).
double largest_weight_sum(const std::vector<float>& w, int64_t top_k) {
  double most = 0;
  for (size_t t = 0; top_k > 0 && t + size_t(top_k) <= w.size(); t += size_t(top_k)) {
    double sum = 0;
    for (size_t j = t; j < t + size_t(top_k); ++j)
      if (std::isfinite(w[j])) sum += std::fabs(double(w[j]));
    most = std::max(most, sum);
  }
  return most;
}

// gmm's operands read from the files of the command line and checked against each other.
struct GmmInputs {
  vkgmm::GmmProblem p;
  Operand L, R;
  std::optional<Operand> E, B, W;  // --existing-out, --bias, --weights
  std::vector<int32_t> ids;        // --ids
  std::vector<int64_t> out_shape;
};

GmmInputs read_gmm(const Job& j) {
  const Args& a = j.args;
  npy::Array lhs = load(a, "lhs");
  GmmRhs rhs = gmm_rhs(j);  // an .npy (floats, or raw blocks with --rhs-format) or FILE.gguf:TENSOR
  std::vector<int32_t> group_sizes, ids;
  int64_t T = 0, top_k = 0;
  if (j.routed) {
    const npy::Array id_arr = load(a, "ids");
    ids = ids_of(id_arr, j.num_experts);
    T = id_arr.shape[0];
    top_k = id_arr.shape[1];
  } else {
    group_sizes = group_sizes_of(load(a, "group-sizes"));
  }
  const bool lhs_per_slot = j.routed && lhs.shape.size() == 3;
  if (j.routed && !lhs_per_slot)
    expect_rank(lhs, "lhs", 2, "[T, k] (or [T, top_k, k])");
  else if (!j.routed)
    expect_rank(lhs, "lhs", 2, "[m, k]");
  if (j.routed && (lhs.shape[0] != T || (lhs_per_slot && lhs.shape[1] != top_k)))
    throw UsageError("--lhs: shape " + shape_str(lhs.shape) + " does not match --ids " + shape_str({T, top_k}) +
                     ": expected [T, k] or [T, top_k, k]");
  const int64_t m = lhs.shape[0], k = lhs.shape.back();
  const int64_t n = rhs.n, g_local = rhs.g_local;
  // The plan sees only k and the buffer sizes; a mismatched k must be caught here.
  if (rhs.k != k)
    throw UsageError("--rhs: " + rhs.desc + " has k = " + std::to_string(rhs.k) + " but --lhs " +
                     shape_str(lhs.shape) + " has k = " + std::to_string(k) +
                     (rhs.transposed ? " (rhs is [G_local, n, k])" : " (rhs is [G_local, k, n])"));
  if (vkgmm::gated(j.activation) && n % 2 != 0)
    throw UsageError(std::string("--activation ") + vkgmm::activation_name(j.activation) + ": the product's width n = " +
                     std::to_string(n) + " (from --rhs " + rhs.desc + ") is odd; it must be [gate | up], even");
  const int64_t n_out = vkgmm::gated(j.activation) ? n / 2 : n;

  GmmInputs in{common_problem<vkgmm::GmmProblem>(j, m, k, n, group_sizes), {}, {}, {}, {}, {}, std::move(ids), {}};
  vkgmm::GmmProblem& p = in.p;
  p.num_rhs_groups = g_local;
  p.transpose_rhs = rhs.transposed;  // implied by a quantized or GGUF rhs
  p.epilogue.activation = j.activation;
  if (j.routed) {
    if (j.num_experts > 0 && j.num_experts - g_local < p.group_offset)  // no sum that could overflow
      throw UsageError("--num-experts " + std::to_string(j.num_experts) + " is smaller than --group-offset " +
                       std::to_string(p.group_offset) + " + the " + std::to_string(g_local) +
                       " experts --rhs holds");
    p.routing.top_k = top_k;
    p.routing.lhs_per_slot = lhs_per_slot;
    p.routing.combine = j.combine;
    p.routing.num_experts = j.num_experts;
    in.out_shape = j.combine ? std::vector<int64_t>{T, n_out} : std::vector<int64_t>{T, top_k, n_out};
  } else {
    in.out_shape = {m, n_out};
  }
  in.L = input_operand(std::move(lhs), "lhs", j.to_bf16);
  // An .npy lhs is bf16 only when rounded from f32.
  expect_something_to_round(j.to_bf16, in.L.type == DType::bf16, rhs.rounded, vkgmm::dtype_name(in.L.type),
                            vkgmm::dtype_name(rhs.op.type));
  in.R = std::move(rhs.op);
  p.lhs_type = in.L.type;
  p.rhs_type = in.R.type;
  if (j.combine) in.W = f32_operand(load(a, "weights"), "weights", {T, top_k}, "[T, top_k]");
  if (a.get("bias")) {
    in.B = f32_operand(load(a, "bias"), "bias", {g_local, n}, "[G_local, n] (n: the product's width)");
    p.epilogue.bias = true;
  }
  if (a.get("existing-out")) {
    npy::Array e = load(a, "existing-out");
    if (e.shape != in.out_shape)
      throw UsageError("--existing-out: expected shape " + shape_str(in.out_shape) + " (the output's), got " +
                       shape_str(e.shape));
    in.E = existing_operand(std::move(e), j.out_type);
    p.existing_out = true;
  }
  return in;
}

void run_gmm(Job& j) {
  const Args& a = j.args;
  const GmmInputs in = read_gmm(j);
  const vkgmm::GmmProblem& p = in.p;
  uint64_t out_elements = 1;
  for (int64_t d : in.out_shape) out_elements *= uint64_t(d);
  const VkDeviceSize out_bytes = out_elements * vkgmm::dtype_size(j.out_type);

  vkgmm::Context ctx;
  const vkgmm::GmmPlan plan(ctx, p);  // the contract's checks; throws vkgmm::Error naming the argument
  const vkgmm::Buffer ob =
      j.routed ? run_routed(ctx, plan, out_bytes, in.L, in.R, in.E, in.B, in.ids, in.W)
               : run_plan<vkgmm::GmmPlan, vkgmm::GmmOperands>(ctx, p, plan, a.device_metadata, out_bytes, in.L,
                                                               in.R, in.E, in.B);

  const std::vector<uint8_t> out = download_output(ob, j.out_type, out_elements);
  if (a.check) {
    const std::vector<float> e = in.E ? in.E->values() : std::vector<float>{};
    const std::vector<float> bias = in.B ? in.B->values() : std::vector<float>{};
    const std::vector<float> L = in.L.values(), R = in.R.values(), W = in.W ? in.W->values() : std::vector<float>{};
    CheckScale scale = check_scale(in.L.type, in.R.type, j.out_type, p.k, L, R);
    if (in.W) scale.term *= largest_weight_sum(W, p.routing.top_k);
    check_against(Operand{j.out_type, out}.values(),
                  j.routed ? vkgmm::reference::gmm_routed(p, L, R, in.ids, W, e, bias)
                           : vkgmm::reference::gmm(p, L, R, e, bias),
                  scale);
  }
  write_output(*a.get("out"), j.out_type, out, in.out_shape);
}

void run_tgmm(Job& j) {
  const Args& a = j.args;
  npy::Array lhs = load(a, "lhs"), rhs = load(a, "rhs");
  const std::vector<int32_t> group_sizes = group_sizes_of(load(a, "group-sizes"));
  expect_rank(lhs, "lhs", 2, "[k, m]");
  expect_rank(rhs, "rhs", 2, "[m, n]");
  const int64_t k = lhs.shape[0], m = lhs.shape[1], n = rhs.shape[1];
  if (rhs.shape[0] != m)
    throw UsageError("--rhs: shape " + shape_str(rhs.shape) + " has m = " + std::to_string(rhs.shape[0]) +
                     " but --lhs " + shape_str(lhs.shape) + " [k, m] has m = " + std::to_string(m));

  auto p = common_problem<vkgmm::TgmmProblem>(j, m, k, n, group_sizes);
  p.num_actual_groups = optional_count(a, "num-actual-groups", -1);
  const Operand L = input_operand(std::move(lhs), "lhs", j.to_bf16);
  const Operand R = input_operand(std::move(rhs), "rhs", j.to_bf16);
  expect_something_to_round(j.to_bf16, L.type == DType::bf16, R.type == DType::bf16, vkgmm::dtype_name(L.type),
                            vkgmm::dtype_name(R.type));
  p.lhs_type = L.type;
  p.rhs_type = R.type;

  // The number of output groups, when the offsets are in range (the plan refuses them otherwise).
  const int64_t G = static_cast<int64_t>(group_sizes.size());
  const int64_t groups = p.num_actual_groups >= 0 ? p.num_actual_groups : G - p.group_offset;
  const bool groups_valid = groups >= 0 && groups <= G - p.group_offset;
  std::optional<Operand> E;
  npy::Array e_arr;
  if (a.get("existing-out")) {
    e_arr = load(a, "existing-out");
    if (groups_valid && e_arr.shape != std::vector<int64_t>{groups, k, n})
      throw UsageError("--existing-out: expected shape " + shape_str({groups, k, n}) +
                       " [num_actual_groups, k, n], got " + shape_str(e_arr.shape));
    p.existing_out = true;
  }

  vkgmm::Context ctx;
  const vkgmm::TgmmPlan plan(ctx, p);
  if (!groups_valid)  // the plan should have refused this; never size buffers from bad counts
    throw vkgmm::Error(vkgmm::Status::internal, "--group-offset / --num-actual-groups out of range");
  if (p.existing_out) E = existing_operand(std::move(e_arr), j.out_type);
  const uint64_t out_elements = uint64_t(groups) * uint64_t(k) * uint64_t(n);  // the plan bounded it
  const vkgmm::Buffer ob = run_plan<vkgmm::TgmmPlan, vkgmm::TgmmOperands>(
      ctx, p, plan, a.device_metadata, out_elements * vkgmm::dtype_size(j.out_type), L, R, E);

  const std::vector<uint8_t> out = download_output(ob, j.out_type, out_elements);
  if (a.check) {
    // Each output group sums its own rows of lhs and rhs.
    int64_t longest = 0;
    for (int64_t g = p.group_offset; g < p.group_offset + groups; ++g)
      longest = std::max<int64_t>(longest, group_sizes[size_t(g)]);
    const std::vector<float> lv = L.values(), rv = R.values();
    check_against(Operand{j.out_type, out}.values(),
                  vkgmm::reference::tgmm(p, lv, rv, E ? E->values() : std::vector<float>{}),
                  check_scale(L.type, R.type, j.out_type, longest, lv, rv));
  }
  write_output(*a.get("out"), j.out_type, out, {groups, k, n});
}

}  // namespace

int run_main(int argc, char** argv) {
  return exit_status_of([&] {
    const Args args = parse_args(argc, argv);
    if (args.help) {
      std::fputs(tool::with_block_formats(kRunUsage).c_str(), stdout);
      return 0;
    }
    Job job = prepare(args);
    if (args.op == "gmm")
      run_gmm(job);
    else
      run_tgmm(job);
    return 0;
  });
}
