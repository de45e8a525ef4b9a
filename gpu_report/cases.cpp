#include "cases.hpp"

#include <algorithm>
#include <functional>
#include <optional>

#include "problems.hpp"
#include "tiling_text.hpp"
#include "vkgmm/ops.hpp"
#include "vkgmm/top_k.hpp"
#include "workloads.hpp"

namespace gpu_report {

namespace {

using vkgmm::DType;

constexpr int64_t kDecodeRowsPerGroup = 16;

// A later pass of gmm (its tile heights per group) shows its own block rows as the tiling's tm; a pass
// with no tiling (the backward's gradient pass, top-k) shows none.
void add_pipelines(Case& c, const std::string& label, const std::optional<vkgmm::Tiling>& tiling,
                   const std::vector<vkgmm::internals::PlanPipeline>& pipelines) {
  for (const vkgmm::internals::PlanPipeline& p : pipelines) {
    std::string text;
    if (tiling) {
      vkgmm::Tiling t = *tiling;
      if (p.pass)
        for (const vkgmm::internals::PipelineConstant& k : p.constants)
          if (k.name == "TM") t.tm = k.value;
      text = tool::tiling_text(t);
    }
    c.pipelines.push_back({label + (p.pass ? " pass " + std::to_string(p.pass + 1) : ""), text, p});
  }
}

template <class Plan>
void add_pipelines(Case& c, const std::string& label, const Plan& plan) {
  add_pipelines(c, label, plan.tiling(), vkgmm::internals::plan_pipelines(plan));
}

// Every part of the backward, under the part's name.
void add_backward(Case& c, const vkgmm::GmmBackwardPlan& plan) {
  for (const vkgmm::internals::PlanPart& part : vkgmm::internals::plan_parts(plan))
    add_pipelines(c, part.part, part.tiling, part.pipelines);
}

// Plans the case with `plan` (which adds its pipelines); a refusal becomes the case's error.
void plan_into(std::vector<Case>& out, Case c, const std::string& only, const std::function<void(Case&)>& plan) {
  if (!only.empty() && c.name.find(only) == std::string::npos) return;
  try {
    plan(c);
  } catch (const std::exception& e) {
    c.pipelines.clear();
    c.error = e.what();
  }
  out.push_back(std::move(c));
}

std::string dims(std::initializer_list<int64_t> v) {
  std::string s;
  for (int64_t x : v) s += std::string(s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

// preset's workload (bench/workloads.cpp) in element type t.
bench::Workload preset_workload(const std::string& preset, DType t) {
  bench::Workload w;
  bench::make_preset(preset, w);
  w.dtype = t;
  return w;
}

// A case named `name` of w's shape (m, k, n, G), its n taken as `n` where given.
Case shaped_case(std::string name, const bench::Workload& w, int64_t n = 0) {
  Case c;
  c.name = std::move(name);
  c.shape = dims({w.m, w.k, n ? n : w.n, w.groups});
  return c;
}

void plan_gmm(vkgmm::Context& ctx, Case& c, const vkgmm::GmmProblem& p, const std::string& label = "gmm") {
  const vkgmm::GmmPlan plan(ctx, p);
  add_pipelines(c, label, plan);
}

}  // namespace

std::vector<Case> plan_cases(vkgmm::Context& ctx, const std::string& only) {
  std::vector<Case> out;
  const DType kTypes[] = {DType::f32, DType::f16, DType::bf16};
  // The default presets (gmm and the backward), every element type, rhs [G, k, n] and [G, n, k].
  for (const std::string& preset : bench::preset_names())
    for (DType t : kTypes)
      for (bool transposed : {false, true}) {
        const bench::Workload w = preset_workload(preset, t);
        Case c = shaped_case(preset + " " + vkgmm::dtype_name(t) + (transposed ? " rhsT" : ""), w);
        c.decode = w.m / w.groups < kDecodeRowsPerGroup;
        plan_into(out, c, only, [&](Case& c) {
          vkgmm::GmmProblem p = bench::gmm_problem(w);
          p.transpose_rhs = transposed;
          if (w.op == bench::Op::backward) {
            add_backward(c, vkgmm::GmmBackwardPlan(ctx, p));
          } else {
            plan_gmm(ctx, c, p);
          }
        });
      }
  // The fused epilogue with group sizes: moe-prefill as an up projection, bias + SwiGLU over [gate | up].
  for (DType t : kTypes) {
    const bench::Workload w = preset_workload("moe-prefill", t);
    const Case c = shaped_case(std::string("moe-prefill ") + vkgmm::dtype_name(t) + " bias+swiglu", w, 2 * w.n);
    plan_into(out, c, only, [&](Case& c) {
      vkgmm::GmmProblem p = bench::gmm_problem(w);
      p.n = 2 * w.n;
      p.epilogue.bias = true;
      p.epilogue.activation = vkgmm::Activation::swiglu;
      plan_gmm(ctx, c, p);
    });
  }
  // tgmm on its own (lhs [k, m], as `vkgmm bench --op tgmm`), at moe-prefill's and moe-fine's shapes.
  for (const char* preset : {"moe-prefill", "moe-fine"})
    for (DType t : kTypes) {
      bench::Workload w = preset_workload(preset, t);
      w.op = bench::Op::tgmm;
      const Case c = shaped_case(std::string("tgmm ") + preset + " " + vkgmm::dtype_name(t), w);
      plan_into(out, c, only, [&](Case& c) {
        const vkgmm::TgmmPlan plan(ctx, bench::tgmm_problem(w));
        add_pipelines(c, "tgmm", plan);
      });
    }
  // tgmm with moe-fine's group sizes on the device: its split reduction built there
  // (shaders/tgmm_split.glsl) and summed by the listed combine.
  for (DType t : kTypes) {
    bench::Workload w = preset_workload("moe-fine", t);
    w.op = bench::Op::tgmm;
    const Case c = shaped_case(std::string("tgmm moe-fine ") + vkgmm::dtype_name(t) + " device sizes", w);
    plan_into(out, c, only, [&](Case& c) {
      vkgmm::TgmmProblem p = bench::tgmm_problem(w);
      p.device_group_sizes.count = int64_t(p.group_sizes.size());
      p.group_sizes.clear();
      const vkgmm::TgmmPlan plan(ctx, p);
      add_pipelines(c, "tgmm", plan);
    });
  }
  // decode with its group sizes on the device: the kernel reads them itself (SIZES_IN_KERNEL), no build.
  for (DType t : kTypes) {
    const bench::Workload w = preset_workload("decode", t);
    Case c = shaped_case(std::string("decode ") + vkgmm::dtype_name(t) + " device sizes", w);
    c.decode = true;
    plan_into(out, c, only, [&](Case& c) {
      vkgmm::GmmProblem p = bench::gmm_problem(w);
      p.device_group_sizes.count = int64_t(p.group_sizes.size());
      p.group_sizes.clear();
      plan_gmm(ctx, c, p);
    });
  }
  // Routed by expert ids, combined in token order (the bench's main times), in the experts' first window
  // of one binding (the bench's windows; every later window differs only in adding existing_out), and
  // the routed backward (moe-grad-ids) whole: its recomputed forward, gradient pass, d_rhs and d_lhs. Then
  // an up projection with the fused epilogue (bias + SwiGLU over [gate | up], per slot), and its backward
  // (the gradient pass through SwiGLU, d_bias).
  auto routed = [&](const std::string& preset, DType t, bool epilogue, bool backward) {
    bench::Workload w;
    bench::make_preset(preset, w);
    if (!w.quantized()) w.dtype = t;
    backward = backward || w.op == bench::Op::backward;
    Case c;
    c.name = preset + " " + vkgmm::dtype_name(w.dtype) + (epilogue ? " bias+swiglu" : "") +
             (backward && w.op != bench::Op::backward ? " backward" : "");
    c.quantized = w.quantized();
    const int64_t n = epilogue ? 2 * w.n : w.n;
    c.shape = dims({w.m, w.k, n, w.groups, w.top_k});
    c.decode = w.m * w.top_k / w.groups < kDecodeRowsPerGroup;
    plan_into(out, c, only, [&](Case& c) {
      vkgmm::GmmProblem p = bench::routed_problem(w, !epilogue);
      const int64_t per = bench::experts_per_window(w, ctx.max_whole_input_bytes(w.rhs_type()));
      const int64_t windows = (w.groups + per - 1) / per;
      p.num_rhs_groups = (w.groups + windows - 1) / windows;
      if (epilogue) {
        p.n = n;
        p.epilogue.bias = true;
        p.epilogue.activation = vkgmm::Activation::swiglu;
      }
      if (backward)
        add_backward(c, vkgmm::GmmBackwardPlan(ctx, p));
      else
        plan_gmm(ctx, c, p);
    });
  };
  for (const std::string& preset : bench::ids_preset_names())
    for (DType t : kTypes) routed(preset, t, false, false);
  for (DType t : kTypes) routed("qwen3-ids-t64", t, true, false);
  for (DType t : kTypes) routed("qwen3-ids-t64", t, true, true);
  // Top-k routing and its backward at Qwen3's router (128 experts, top-8, renormalized) over
  // qwen3-ids-t64's tokens.
  {
    bench::Workload w;
    bench::make_preset("qwen3-ids-t64", w);
    Case c;
    c.name = "top_k qwen3-ids-t64";
    c.shape = dims({w.m, w.groups, w.top_k});
    plan_into(out, c, only, [&](Case& c) {
      const vkgmm::TopKProblem p{.tokens = w.m, .experts = w.groups, .top_k = w.top_k};
      add_pipelines(c, "top_k", std::nullopt, vkgmm::internals::plan_pipelines(vkgmm::TopKPlan(ctx, p)));
      add_pipelines(c, "top_k backward", std::nullopt,
                    vkgmm::internals::plan_pipelines(vkgmm::TopKBackwardPlan(ctx, p)));
    });
  }
  // The block formats (--presets quant): routed decode and prefill with GGUF blocks as weights.
  for (const std::string& preset : bench::quant_preset_names()) {
    bench::Workload w;
    bench::make_preset(preset, w);
    if (!w.quantized()) continue;  // the peers are among the cases above
    if (w.routed()) {
      routed(preset, w.dtype, false, false);
      continue;
    }
    Case c = shaped_case(preset + " " + vkgmm::dtype_name(w.dtype), w);
    c.quantized = true;
    c.decode = w.m / w.groups < kDecodeRowsPerGroup;
    plan_into(out, c, only, [&](Case& c) { plan_gmm(ctx, c, bench::gmm_problem(w)); });
  }
  // Every block format on the matrix units (where the device has them): moe-prefill's shape with f16
  // activations and GGUF's [G, n, k] blocks, as a quantized prefill runs there.
  if (!ctx.info().matrix_extension.empty())
    for (const std::string& preset : bench::quant_preset_names()) {
      bench::Workload w;
      bench::make_preset(preset, w);
      if (!w.quantized() || !w.routed()) continue;  // one per format: its ids-decode preset names it
      const DType format = *w.rhs_format;
      bench::make_preset("moe-prefill", w);
      Case c = shaped_case(std::string(vkgmm::dtype_name(format)) + " matrix f16", w);
      c.quantized = true;
      plan_into(out, c, only, [&](Case& c) {
        vkgmm::GmmProblem p = bench::gmm_problem(w);
        p.lhs_type = p.out_type = DType::f16;
        p.rhs_type = format;
        p.transpose_rhs = true;
        p.schedule = vkgmm::Schedule::matrix;
        plan_gmm(ctx, c, p);
      });
    }
  return out;
}

}  // namespace gpu_report
