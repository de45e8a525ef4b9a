// `vkgmm run gmm|tgmm`: read .npy operands, run one grouped matmul on the device, write the result.
//
// Everything that can be checked from the files alone (flags, ranks, matching k / m, existing_out's shape)
// is checked before the device is touched, with messages naming the CLI flag; the library's plan then
// checks the contract's rules (group sizes, offsets, tiling). The output is written last and atomically,
// so any failure, including a failed --check, leaves no output file.
//
// This file is the sequence of a run; its steps live apart: the command line (run_args), .npy files <->
// operands and buffers (run_operands), --check (run_check) and the output file (run_output).
#include "run.hpp"

#include <cstdio>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "fail.hpp"
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
// path), run with the tiling the host path's plan picked for those sizes, so that the output is the host
// path's bit for bit (an automatic tiling would size its tiles from m / G instead of the sizes).
template <typename Problem, typename Plan>
Problem on_device(const Problem& p, const Plan& host_plan) {
  Problem q = p;
  q.tiling = vkgmm::TilingChoice::of(host_plan.tiling());
  q.device_group_sizes.count = static_cast<int64_t>(p.group_sizes.size());
  q.group_sizes.clear();
  return q;
}

// Uploads the operands, runs the problem once (submit and wait) and returns the output buffer: through
// `plan` (the host path, which has checked the problem, the group sizes included), or with
// --device-metadata through a device-path plan of the same problem, the sizes uploaded to a buffer.
template <typename Plan, typename Operands, typename Problem>
vkgmm::Buffer run_plan(vkgmm::Context& ctx, const Problem& p, const Plan& plan, bool device_metadata,
                       const Operand& L, const Operand& R, const std::optional<Operand>& E) {
  const vkgmm::OperandSizes sz = plan.sizes();
  vkgmm::Buffer lb = upload(ctx, L, sz.lhs, "lhs");
  vkgmm::Buffer rb = upload(ctx, R, sz.rhs, "rhs");
  vkgmm::Buffer ob = ctx.create_buffer(std::max<VkDeviceSize>(4, sz.out));
  vkgmm::Buffer eb;  // stays empty without --existing-out
  Operands ops{lb.view(), rb.view(), ob.view(), {}};
  if (E) {
    eb = upload(ctx, *E, sz.existing_out, "existing-out");
    ops.existing_out = eb.view();
  }
  if (!device_metadata) {
    ctx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
    return ob;
  }
  const Plan device_plan(ctx, on_device(p, plan));
  const std::vector<int32_t>& gs = p.group_sizes;  // G >= 1: the host plan refuses G = 0
  vkgmm::Buffer sizes = ctx.create_buffer(gs.size() * 4), status = ctx.create_buffer(4);
  const uint32_t zero = 0;
  sizes.upload(gs.data(), gs.size() * 4);
  status.upload(&zero, 4);
  // A device-path plan with nothing to run (gmm with m = 0) has no workspace, and its record() refuses
  // the views (as if the sizes were on the host): it gets none, and dispatches nothing either way.
  if (device_plan.workspace_bytes() > 0) {
    ops.group_sizes = sizes.view();
    ops.status = status.view();  // no workspace view: the plan's own
  }
  ctx.submit_and_wait([&](VkCommandBuffer cb) { device_plan.record(cb, ops); });
  uint32_t word = 0;
  status.download(&word, 4);
  if (word != 0)  // the host plan accepted these sizes: the device must have taken them as they are
    throw vkgmm::Error(vkgmm::Status::internal,
                       "--device-metadata: the device status word is " + std::to_string(word) + " for valid sizes");
  return ob;
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

bool any_16bit(DType a, DType b, DType c) { return a != DType::f32 || b != DType::f32 || c != DType::f32; }

void run_gmm(Job& j) {
  const Args& a = j.args;
  npy::Array lhs = load(a, "lhs"), rhs = load(a, "rhs");
  const std::vector<int32_t> group_sizes = group_sizes_of(load(a, "group-sizes"));
  expect_rank(lhs, "lhs", 2, "[m, k]");
  expect_rank(rhs, "rhs", 3, a.transpose_rhs ? "[G_local, n, k]" : "[G_local, k, n]");
  const int64_t m = lhs.shape[0], k = lhs.shape[1];
  const int64_t rhs_k = a.transpose_rhs ? rhs.shape[2] : rhs.shape[1];
  const int64_t n = a.transpose_rhs ? rhs.shape[1] : rhs.shape[2];
  // The plan sees only k and the buffer sizes; a mismatched k must be caught here.
  if (rhs_k != k)
    throw UsageError("--rhs: shape " + shape_str(rhs.shape) + " has k = " + std::to_string(rhs_k) +
                     " but --lhs " + shape_str(lhs.shape) + " has k = " + std::to_string(k) +
                     (a.transpose_rhs ? " (--transpose-rhs: rhs is [G_local, n, k])" : " (rhs is [G_local, k, n])"));

  auto p = common_problem<vkgmm::GmmProblem>(j, m, k, n, group_sizes);
  p.num_rhs_groups = rhs.shape[0];
  p.transpose_rhs = a.transpose_rhs;
  const Operand L = input_operand(std::move(lhs), "lhs", j.to_bf16);
  const Operand R = input_operand(std::move(rhs), "rhs", j.to_bf16);
  p.lhs_type = L.type;
  p.rhs_type = R.type;
  std::optional<Operand> E;
  if (a.get("existing-out")) {
    npy::Array e = load(a, "existing-out");
    if (e.shape != std::vector<int64_t>{m, n})
      throw UsageError("--existing-out: expected shape " + shape_str({m, n}) + " [m, n], got " + shape_str(e.shape));
    E = existing_operand(std::move(e), j.out_type);
    p.existing_out = true;
  }

  vkgmm::Context ctx;
  const vkgmm::GmmPlan plan(ctx, p);  // the contract's checks; throws vkgmm::Error naming the argument
  const vkgmm::Buffer ob = run_plan<vkgmm::GmmPlan, vkgmm::GmmOperands>(ctx, p, plan, a.device_metadata, L, R, E);

  const std::vector<uint8_t> out = download_output(ob, j.out_type, uint64_t(m * n));
  if (a.check)
    check_against(Operand{j.out_type, out}.values(),
                  vkgmm::reference::gmm(p, L.values(), R.values(), E ? E->values() : std::vector<float>{}),
                  any_16bit(L.type, R.type, j.out_type));
  write_output(*a.get("out"), j.out_type, out, {m, n});
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
  p.lhs_type = L.type;
  p.rhs_type = R.type;

  // The number of output groups, when the offsets are in range (the plan refuses them otherwise).
  const int64_t G = static_cast<int64_t>(group_sizes.size());
  const int64_t groups = p.num_actual_groups >= 0 ? p.num_actual_groups : G - p.group_offset;
  const bool groups_valid = groups >= 0 && p.group_offset + groups <= G;
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
  const vkgmm::Buffer ob = run_plan<vkgmm::TgmmPlan, vkgmm::TgmmOperands>(ctx, p, plan, a.device_metadata, L, R, E);

  const std::vector<uint8_t> out = download_output(ob, j.out_type, uint64_t(groups * k * n));
  if (a.check)
    check_against(Operand{j.out_type, out}.values(),
                  vkgmm::reference::tgmm(p, L.values(), R.values(), E ? E->values() : std::vector<float>{}),
                  any_16bit(L.type, R.type, j.out_type));
  write_output(*a.get("out"), j.out_type, out, {groups, k, n});
}

}  // namespace

int run_main(int argc, char** argv) {
  try {
    const Args args = parse_args(argc, argv);
    if (args.help) {
      std::fputs(kRunUsage, stdout);
      return 0;
    }
    Job job = prepare(args);
    if (args.op == "gmm")
      run_gmm(job);
    else
      run_tgmm(job);
    return 0;
  } catch (const UsageError& e) {
    return fail(2, e.what());
  } catch (const vkgmm::Error& e) {
    // The caller's input broke a rule: an argument error. Everything else is the device or the library.
    return fail(e.status() == vkgmm::Status::invalid_argument ? 2 : 1, e.what());
  } catch (const std::bad_alloc&) {
    return fail(1, "out of host memory");
  } catch (const std::exception& e) {
    return fail(1, e.what());
  }
}
