// Trains a small MoE layer (router, top-2 of 4 experts, SwiGLU with biases) to imitate a teacher layer of
// the same shape with plain SGD on the mean squared error. Each step is one command buffer and one
// submit: y starts as -target (a copy), the forward adds the layer to it (the plan accumulates), so y is
// the residual y - target, which is also d_y, the gradient of the loss 1/2 |y - target|^2; the backward
// follows in the same command buffer. The host reads the residual for the loss and the gradients for
// the update. The first step's update is checked against finite differences of a CPU forward in double
// (gradient_check.cpp). Exits 1 unless that check passes and the loss falls by at least 10x.
#include <vulkan/vulkan.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <random>
#include <vector>

#include "../no_options.hpp"
#include "gradient_check.hpp"
#include "vkgmm/vkgmm.hpp"

namespace {

using train::Floats;
using train::Weights;

Floats random(size_t n, float scale, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, scale);
  Floats v(n);
  for (float& e : v) e = d(rng);
  return v;
}

vkgmm::Buffer upload(vkgmm::Context& ctx, const Floats& v) {
  vkgmm::Buffer b = ctx.create_buffer(v.size() * 4);
  b.upload(v.data(), v.size() * 4);
  return b;
}

Floats download(const vkgmm::Buffer& b, size_t n) {
  Floats v(n);
  b.download(v.data(), n * 4);
  return v;
}

// The transfer writes before the compute passes that read and add to them.
void transfers_then_compute(VkCommandBuffer cb) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, nullptr,
                       0, nullptr);
}

// What --help prints; the example takes no options (no_options.hpp).
constexpr const char* kHelp =
    "Trains a small MoE layer (router, top-2 of 4 experts, SwiGLU with biases) to imitate a teacher layer\n"
    "by SGD, each step's forward and backward in one command buffer (MoeLayerPlan). Checks the first\n"
    "step's update against finite differences of a CPU forward in double, and that the loss falls by at\n"
    "least 10x in 300 steps; exits 1 otherwise. VKGMM_VALIDATE=1 turns the validation layer on.\n";

}  // namespace

int main(int argc, char** argv) {
  if (const int exit_status = handle_no_options(argc, argv, "vkgmm_example_moe_training", kHelp); exit_status >= 0)
    return exit_status;
  try {
    vkgmm::Context ctx;
    vkgmm::MoeLayerProblem p;
    p.tokens = 128, p.d_model = 16, p.d_ff = 16, p.num_experts = 4, p.top_k = 2;
    p.activation = vkgmm::Activation::swiglu;
    p.up_bias = p.down_bias = true;
    const size_t T = size_t(p.tokens), d = size_t(p.d_model), f = size_t(p.d_ff), E = size_t(p.num_experts);
    std::mt19937 rng(1);
    auto make_weights = [&](float scale) {
      return Weights{random(d * E, 1.0f, rng), random(E * d * 2 * f, scale, rng), random(E * f * d, scale, rng),
                     random(E * 2 * f, scale, rng), random(E * d, scale, rng)};
    };
    const Weights teacher = make_weights(0.4f);
    Weights student = make_weights(0.2f);
    const Floats x = random(T * d, 1.0f, rng);

    // The teacher's outputs: a forward of its own (no accumulation).
    Floats target;
    {
      const vkgmm::MoeLayerPlan plan(ctx, p);
      vkgmm::Buffer bx = upload(ctx, x), r = upload(ctx, teacher.router_w), u = upload(ctx, teacher.w_up),
                    w = upload(ctx, teacher.w_down), bu = upload(ctx, teacher.b_up), bd = upload(ctx, teacher.b_down);
      vkgmm::Buffer y = ctx.create_buffer(T * d * 4);
      vkgmm::MoeLayerOperands ops{bx.view(), r.view(), u.view(), w.view(), bu.view(), bd.view(), y.view()};
      ctx.submit_and_wait([&](VkCommandBuffer cb) { plan.record_forward(cb, ops); });
      target = download(y, T * d);
    }

    vkgmm::MoeLayerProblem train = p;
    train.accumulate = true;  // y = -target + layer(x): the residual
    const vkgmm::MoeLayerPlan plan(ctx, train);
    const vkgmm::MoeLayerSizes s = plan.sizes();
    Floats minus_target(target.size());
    for (size_t i = 0; i < target.size(); ++i) minus_target[i] = -target[i];
    vkgmm::Buffer bx = upload(ctx, x), start = upload(ctx, minus_target), y = ctx.create_buffer(s.y);
    vkgmm::Buffer dx = ctx.create_buffer(s.x), drw = ctx.create_buffer(s.router_w), dwu = ctx.create_buffer(s.w_up);
    vkgmm::Buffer dwd = ctx.create_buffer(s.w_down), dbu = ctx.create_buffer(s.b_up), dbd = ctx.create_buffer(s.b_down);
    vkgmm::Buffer workspace = ctx.create_buffer(plan.workspace_bytes());

    const float lr = 0.1f;
    double first = 0, last = 0;
    const int steps = 300;
    const Weights initial = student;  // the first step's update is checked against the CPU's gradient
    bool gradients_ok = false;
    for (int step = 0; step <= steps; ++step) {
      vkgmm::Buffer r = upload(ctx, student.router_w), u = upload(ctx, student.w_up), w = upload(ctx, student.w_down);
      vkgmm::Buffer bu = upload(ctx, student.b_up), bd = upload(ctx, student.b_down);
      vkgmm::MoeLayerOperands ops{bx.view(), r.view(), u.view(), w.view(), bu.view(), bd.view(), y.view()};
      ops.workspace = workspace.view();
      vkgmm::MoeLayerGradients g{y.view(), dx.view(), drw.view(), dwu.view(), dbu.view(), dwd.view(), dbd.view()};
      ctx.submit_and_wait([&](VkCommandBuffer cb) {
        const VkBufferCopy all{0, 0, s.y};
        vkCmdCopyBuffer(cb, start.handle(), y.handle(), 1, &all);
        vkCmdFillBuffer(cb, dx.handle(), 0, VK_WHOLE_SIZE, 0);  // the accumulating gradients start at 0
        vkCmdFillBuffer(cb, drw.handle(), 0, VK_WHOLE_SIZE, 0);
        transfers_then_compute(cb);
        plan.record_forward(cb, ops);
        plan.record_backward(cb, ops, g);
      });
      const Floats residual = download(y, T * d);
      double loss = 0;
      for (float v : residual) loss += 0.5 * double(v) * v;
      loss /= double(T);
      if (step == 0) first = loss;
      last = loss;
      if (step % 50 == 0) std::printf("step %3d  loss %.6f\n", step, loss);
      if (step == steps) break;
      // Plain SGD on the mean loss (the gradients are of the sum: scaled by 1 / T).
      auto sgd = [&](Floats& v, const vkgmm::Buffer& grad) {
        const Floats gv = download(grad, v.size());
        for (size_t i = 0; i < v.size(); ++i) v[i] -= lr * gv[i] / float(T);
      };
      sgd(student.router_w, drw);
      sgd(student.w_up, dwu);
      sgd(student.w_down, dwd);
      sgd(student.b_up, dbu);
      sgd(student.b_down, dbd);
      if (step == 0)
        gradients_ok = train::check_step({p.tokens, p.d_model, p.d_ff, p.num_experts, p.top_k}, initial, student,
                                         double(lr), x, target, first, 16);
    }
    std::printf("loss %.6f -> %.6f (%.1fx lower)\n", first, last, first / last);
    bool ok = true;
    if (!gradients_ok) {
      std::fprintf(stderr, "FAIL: the first step's update differs from the CPU's finite differences\n");
      ok = false;
    }
    if (!(last * 10 <= first)) {
      std::fprintf(stderr, "FAIL: the loss fell by less than 10x\n");
      ok = false;
    }
    return ok ? 0 : 1;
  } catch (const vkgmm::Error& e) {
    std::fprintf(stderr, "FAIL: vkgmm: %s (%s)\n", e.what(), vkgmm::status_name(e.status()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAIL: %s\n", e.what());
  }
  return 1;
}
