// Routed workloads: vkgmm's ids mode, its reference, and the unfused chain (see routed.hpp).
#include "routed.hpp"

#include "problems.hpp"

#include <algorithm>
#include <functional>
#include <random>
#include <stdexcept>

#include "check.hpp"         // parallel_blocks
#include "interface.h"  // the binding count of the plain layout the chain's shaders share with vkgmm's
#include "tuning.hpp"
#include "vkgmm/convert.hpp"
#include "vkgmm/internals.hpp"  // the chain's own pipelines, through the library's pipeline cache
#include "vkgmm/reference.hpp"

namespace vkgmm::spirv {
extern const uint32_t bench_chain_route[], bench_chain_gather[], bench_chain_combine[];
extern const size_t bench_chain_route_words, bench_chain_gather_words, bench_chain_combine_words;
}  // namespace vkgmm::spirv

namespace bench {

void compute_barrier(VkCommandBuffer cb) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT, 0, 1, &mb, 0,
                       nullptr, 0, nullptr);
}

namespace {

constexpr uint32_t kLanes = 64;

uint32_t groups_for(uint64_t items) { return static_cast<uint32_t>((items + kLanes - 1) / kLanes); }

}  // namespace

std::vector<int32_t> expert_order(const Workload& w) {
  std::vector<int32_t> base(size_t(w.groups) + 1, 0);
  for (int64_t e = 0; e < w.groups; ++e) base[size_t(e) + 1] = base[size_t(e)] + w.group_sizes[size_t(e)];
  std::vector<int32_t> order(w.ids.size(), 0);
  for (size_t slot = 0; slot < w.ids.size(); ++slot) order[size_t(base[size_t(w.ids[slot])]++)] = int32_t(slot);
  return order;
}

// ----- vkgmm's ids mode ---------------------------------------------------------------------------------

RoutedInstance::RoutedInstance(vkgmm::Context& context, const Workload& w, const vkgmm::TilingChoice& tiling,
                               int64_t shards, const RoutedInstance* lhs_source)
    : ctx(context), work(w), lhs_source_(lhs_source) {
  const size_t T = size_t(w.m), k = size_t(w.k), n = size_t(w.n), E = size_t(w.groups), K = size_t(w.top_k);
  const uint64_t expert_bytes = vkgmm::storage_bytes(w.rhs_type(), uint64_t(k * n));
  if (shards <= 0) {
    // Windows whose weights one call reads whole (maxStorageBufferRange, or on lavapipe the texel views'
    // 2 GiB of f32: all 128 of Qwen3's experts in f32 or bf16).
    const int64_t fit = experts_per_window(w, ctx.max_whole_input_bytes(w.rhs_type()));
    shards = (w.groups + fit - 1) / fit;
  }
  per_shard_ = (w.groups + shards - 1) / shards;
  shards = (w.groups + per_shard_ - 1) / per_shard_;
  buf_b.resize(size_t(shards));  // sized before plan(): shards() counts them
  plan(tiling, true);
  std::mt19937 rng(w.seed * 7919u + 17u);
  if (!lhs_source_) a = random_values(size_t(w.lhs_rows()) * k, w.dtype, rng);
  if (w.bias) {
    bias = random_values(E * n, vkgmm::DType::f32, rng);
    for (int64_t s = 0; s < shards; ++s) {
      const auto first = bias.begin() + s * per_shard_ * int64_t(n);
      buf_bias.push_back(upload(ctx, vkgmm::DType::f32, std::vector<float>(first, first + shard_experts(s) * int64_t(n))));
    }
  }
  if (w.quantized()) {
    // [E, n, k], blocks along k (GGUF's expert tensor); each window's experts as raw blocks.
    QuantizedWeights q = quantized_weights(*w.rhs_format, w.groups, w.n, w.k, rng);
    b = std::move(q.values);
    for (int64_t s = 0; s < shards; ++s) {
      const auto first = q.blocks.begin() + s * per_shard_ * int64_t(expert_bytes);
      buf_b[size_t(s)] = upload_bytes(ctx, std::vector<uint8_t>(first, first + shard_experts(s) * int64_t(expert_bytes)));
    }
  } else {
    b = random_values(E * k * n, w.dtype, rng);
  }
  if (!lhs_source_) buf_a = upload(ctx, w.dtype, a);
  for (int64_t s = 0; s < shards && !w.quantized(); ++s) {
    const auto first = b.begin() + s * per_shard_ * int64_t(k * n);
    buf_b[size_t(s)] = upload(ctx, w.dtype, std::vector<float>(first, first + shard_experts(s) * int64_t(k * n)));
  }
  buf_ids = ctx.create_buffer(std::max<size_t>(4, w.ids.size() * 4));
  buf_ids.upload(w.ids.data(), w.ids.size() * 4);
  buf_weights = upload(ctx, vkgmm::DType::f32, w.route_weights);
  out_combined = zeros(ctx, vkgmm::DType::f32, T * size_t(w.n_out()));
  out_slots = zeros(ctx, w.slots_type, T * K * size_t(w.n_out()));
  buf_status = ctx.create_buffer(4);
  const uint32_t zero = 0;
  buf_status.upload(&zero, 4);
}

vkgmm::GmmProblem RoutedInstance::problem(bool combine) const { return routed_problem(work, combine); }

void RoutedInstance::plan(const vkgmm::TilingChoice& tiling, bool combine, bool save_pre) {
  plans_.clear();
  combine_ = combine;
  for (int64_t s = 0; s < shards(); ++s) {
    vkgmm::GmmProblem p = problem(combine);
    p.tiling = tiling;
    p.epilogue.save_pre_activation = save_pre;
    p.group_offset = s * per_shard_;
    p.num_rhs_groups = shard_experts(s);
    p.existing_out = s > 0;
    plans_.emplace_back(ctx, p);
  }
}

vkgmm::Tiling RoutedInstance::tiling() const { return plans_.front().tiling(); }
std::string RoutedInstance::tiling_text() const { return bench::tiling_text(plans_.front().tiling()); }

void RoutedInstance::record(VkCommandBuffer cb) const {
  const vkgmm::BufferView out = (combine_ ? out_combined : out_slots).view();
  for (size_t s = 0; s < plans_.size(); ++s) {
    if (s > 0) compute_barrier(cb);  // the next shard reads what the last wrote (existing_out = out)
    vkgmm::GmmOperands ops{lhs_source_ ? lhs_source_->out_slots.view() : buf_a.view(), buf_b[s].view(), out};
    if (work.bias) ops.bias = buf_bias[s].view();
    if (s > 0) ops.existing_out = out;
    ops.ids = buf_ids.view(0, std::max<size_t>(4, work.ids.size() * 4));
    if (combine_) ops.weights = buf_weights.view();
    ops.status = buf_status.view();
    plans_[s].record(cb, ops);
  }
}

uint32_t RoutedInstance::device_status() const {
  uint32_t word = 0;
  buf_status.download(&word, 4);
  return word;
}

void RoutedInstance::poison_outputs() const { fill_with_nan(ctx, {&out_combined, &out_slots}); }

std::vector<Output> RoutedInstance::download() const {
  const size_t T = size_t(work.m), n = size_t(work.n_out()), K = size_t(work.top_k);
  if (combine_) return {{"out", bench::download(out_combined, vkgmm::DType::f32, T * n), work.k}};
  return {{"out_slots", bench::download(out_slots, work.slots_type, T * K * n), work.k}};
}

std::vector<Output> routed_reference(const RoutedInstance& inst, bool combine) {
  const Workload& w = inst.work;
  const vkgmm::GmmProblem p = inst.problem(combine);
  const int64_t E = w.groups, rows = combine ? w.m : w.m * w.top_k, n_out = w.n_out();
  constexpr int64_t kBlock = 16;
  std::vector<float> out(size_t(rows * n_out), 0.0f);
  parallel_blocks((n_out + kBlock - 1) / kBlock, [&](int64_t blk) {
    // Output columns [c0, c0 + cw) come from the product's columns `cols`: the same ones, or gated
    // the gate's and the up's halves ([gate | up] stays the sub-problem's layout).
    const int64_t c0 = blk * kBlock, cw = std::min(kBlock, n_out - c0);
    std::vector<int64_t> cols;
    for (int64_t half = 0; half < (vkgmm::gated(w.activation) ? 2 : 1); ++half)
      for (int64_t c = 0; c < cw; ++c) cols.push_back(half * n_out + c0 + c);
    const int64_t cn = int64_t(cols.size());
    vkgmm::GmmProblem q = p;
    q.n = cn;
    std::vector<float> sub(size_t(E * p.k * cn)), sub_bias(w.bias ? size_t(E * cn) : 0);
    for (int64_t g = 0; g < E; ++g)
      for (int64_t j = 0; j < cn && w.group_sizes[size_t(g)] > 0; ++j) {  // unselected experts: never read
        const int64_t c = cols[size_t(j)];
        if (w.bias) sub_bias[size_t(g * cn + j)] = inst.bias[size_t(g * p.n + c)];
        for (int64_t kk = 0; kk < p.k; ++kk)  // rhs[g] [n, k] (transpose_rhs) or [k, n]
          (p.transpose_rhs ? sub[size_t((g * cn + j) * p.k + kk)] : sub[size_t((g * p.k + kk) * cn + j)]) =
              p.transpose_rhs ? inst.b[size_t((g * p.n + c) * p.k + kk)] : inst.b[size_t((g * p.k + kk) * p.n + c)];
      }
    const std::vector<float> part = vkgmm::reference::gmm_routed(
        q, inst.a, sub, w.ids, combine ? w.route_weights : std::vector<float>{}, {}, sub_bias);
    for (int64_t r = 0; r < rows; ++r) std::copy_n(part.begin() + r * cw, cw, out.begin() + r * n_out + c0);
  });
  return {{combine ? "out" : "out_slots", std::move(out), w.k}};
}

// ----- the unfused chain ---------------------------------------------------------------------------------

struct UnfusedChain::State {
  RoutedInstance* inst = nullptr;
  vkgmm::TilingChoice tiling;
  int64_t T = 0, K = 0, S = 0, E = 0, k = 0, n = 0;
  uint32_t row_words = 0;
  // work: sizes [E], base [E], perm [S], inv [S] (int32).
  uint32_t sizes_off = 0, base_off = 0, perm_off = 0, inv_off = 0;
  vkgmm::Buffer work, lhs_perm, y, out, status;
  VkPipeline route = VK_NULL_HANDLE, gather = VK_NULL_HANDLE, combine = VK_NULL_HANDLE;
  std::vector<vkgmm::GmmPlan> gmm;  // per shard of the instance's experts
  // The sorted gemm: lhs rows permuted on the host, group sizes on the host, out in the workload's type.
  vkgmm::Buffer sorted_lhs, sorted_out;
  std::vector<int32_t> perm;  // expert order -> slot
  std::vector<vkgmm::GmmPlan> sorted;

  // Shard `shard` of the experts (its window of the E groups; the later shards keep the earlier ones'
  // rows through existing_out = out).
  vkgmm::GmmProblem gmm_problem(bool device_sizes, int64_t shard) const {
    const Workload& w = inst->work;
    vkgmm::GmmProblem p;
    p.m = S, p.k = k, p.n = n;
    p.lhs_type = w.dtype;
    p.rhs_type = w.rhs_type();
    p.transpose_rhs = w.transpose_rhs();
    p.tiling = tiling;
    if (device_sizes) {
      p.device_group_sizes.count = E;
      p.out_type = vkgmm::DType::f32;  // fp32 per-slot results for the combine, as ids mode keeps them
    } else {
      p.group_sizes = w.group_sizes;
      p.out_type = vkgmm::DType::f32;
    }
    p.group_offset = shard * inst->experts_per_shard();
    p.num_rhs_groups = inst->shard_experts(shard);
    p.existing_out = shard > 0;
    return p;
  }
};

std::string UnfusedChain::unsupported_reason(const Workload& w) {
  if (w.lhs_per_slot || vkgmm::gated(w.activation) || w.bias || !w.combine) return "the chain gathers [T, k] rows and combines plain products only";
  if ((w.k * int64_t(vkgmm::dtype_size(w.dtype))) % 4) return "the permutation copies whole 32-bit words: k * element size must be a multiple of 4";
  for (int32_t id : w.ids)
    if (id < 0 || id >= w.groups) return "the chain's counting takes ids in [0, E) only";
  return "";
}

UnfusedChain::UnfusedChain(RoutedInstance& inst, const vkgmm::TilingChoice& tiling) : st_(std::make_unique<State>()) {
  State& s = *st_;
  const Workload& w = inst.work;
  s.inst = &inst;
  s.tiling = tiling;
  s.T = w.m, s.K = w.top_k, s.S = w.m * w.top_k, s.E = w.groups, s.k = w.k, s.n = w.n;
  s.row_words = uint32_t(w.k * int64_t(vkgmm::dtype_size(w.dtype)) / 4);
  s.sizes_off = 0, s.base_off = uint32_t(s.E), s.perm_off = uint32_t(2 * s.E), s.inv_off = uint32_t(2 * s.E + s.S);
  vkgmm::Context& ctx = inst.ctx;
  s.work = ctx.create_buffer(size_t(2 * s.E + 2 * s.S) * 4);
  s.lhs_perm = zeros(ctx, w.dtype, size_t(s.S * s.k));
  s.y = zeros(ctx, vkgmm::DType::f32, size_t(s.S * s.n));
  s.out = zeros(ctx, vkgmm::DType::f32, size_t(s.T * s.n));
  s.status = ctx.create_buffer(4);
  const uint32_t zero = 0;
  s.status.upload(&zero, 4);
  using vkgmm::internals::pipeline;
  s.route = pipeline(ctx, vkgmm::spirv::bench_chain_route, vkgmm::spirv::bench_chain_route_words, {kLanes});
  s.gather = pipeline(ctx, vkgmm::spirv::bench_chain_gather, vkgmm::spirv::bench_chain_gather_words, {kLanes});
  s.combine = pipeline(ctx, vkgmm::spirv::bench_chain_combine, vkgmm::spirv::bench_chain_combine_words, {kLanes});
  plan();

  // The sorted gemm's inputs: the stable expert order of the slots, on the host.
  s.perm = expert_order(w);
  std::vector<float> rows(size_t(s.S * s.k));
  for (int64_t i = 0; i < s.S; ++i)
    std::copy_n(inst.a.begin() + (s.perm[size_t(i)] / s.K) * s.k, s.k, rows.begin() + i * s.k);
  s.sorted_lhs = upload(ctx, w.dtype, rows);
  s.sorted_out = zeros(ctx, vkgmm::DType::f32, size_t(s.S * s.n));
  plan_sorted();
}

UnfusedChain::~UnfusedChain() = default;

void UnfusedChain::plan() {
  st_->gmm.clear();
  for (int64_t s = 0; s < st_->inst->shards(); ++s) st_->gmm.emplace_back(st_->inst->ctx, st_->gmm_problem(true, s));
}

void UnfusedChain::plan_sorted() {
  st_->sorted.clear();
  for (int64_t s = 0; s < st_->inst->shards(); ++s)
    st_->sorted.emplace_back(st_->inst->ctx, st_->gmm_problem(false, s));
}

std::string UnfusedChain::tiling_text() const { return bench::tiling_text(st_->gmm.front().tiling()); }
std::string UnfusedChain::sorted_tiling_text() const { return bench::tiling_text(st_->sorted.front().tiling()); }

void UnfusedChain::record(VkCommandBuffer cb) const {
  const State& s = *st_;
  const RoutedInstance& inst = *s.inst;
  const auto bind_and_push = [&](VkPipeline pipeline, const VkDescriptorBufferInfo* infos, const void* push,
                                 uint32_t bytes) {
    vkgmm::internals::bind_and_push(inst.ctx, cb, pipeline, infos, VKGMM_NUM_BINDINGS, push, bytes);
  };
  auto info = [](const vkgmm::Buffer& b) { return VkDescriptorBufferInfo{b.handle(), 0, b.size()}; };
  const VkDescriptorBufferInfo work = info(s.work);
  // (a) counts and the permutation.
  {
    const VkDescriptorBufferInfo infos[VKGMM_NUM_BINDINGS] = {info(inst.buf_ids), work, work, work, work, work};
    const uint32_t push[6] = {uint32_t(s.S), uint32_t(s.E), s.sizes_off, s.base_off, s.perm_off, s.inv_off};
    bind_and_push(s.route, infos, push, sizeof push);
    vkCmdDispatch(cb, 1, 1, 1);
  }
  compute_barrier(cb);
  // (b) the lhs rows gathered into expert order.
  {
    const VkDescriptorBufferInfo infos[VKGMM_NUM_BINDINGS] = {info(inst.buf_a), work, info(s.lhs_perm), work, work, work};
    const uint32_t push[4] = {uint32_t(s.S), s.row_words, uint32_t(s.K), s.perm_off};
    bind_and_push(s.gather, infos, push, sizeof push);
    const uint32_t y = uint32_t(std::min<int64_t>(s.S, 65535)), z = uint32_t((s.S + y - 1) / y);
    vkCmdDispatch(cb, groups_for(s.row_words), y, z);
  }
  compute_barrier(cb);
  // (c) the grouped gemm, its group sizes the counts of (a).
  for (size_t i = 0; i < s.gmm.size(); ++i) {
    if (i > 0) compute_barrier(cb);
    vkgmm::GmmOperands ops{s.lhs_perm.view(), inst.buf_b[i].view(), s.y.view()};
    if (i > 0) ops.existing_out = s.y.view();
    ops.group_sizes = s.work.view(0, size_t(s.E) * 4);
    ops.status = s.status.view();
    s.gmm[i].record(cb, ops);
  }
  compute_barrier(cb);
  // (d) un-permute and combine with the routing weights.
  {
    const VkDescriptorBufferInfo infos[VKGMM_NUM_BINDINGS] = {info(s.y), info(inst.buf_weights), info(s.out), work,
                                                                work, work};
    const uint32_t out_type = 0u;  // f32, as ids mode's out (the shader also rounds to f16 / bf16: 1, 2)
    const uint32_t push[5] = {uint32_t(s.T), uint32_t(s.K), uint32_t(s.n), s.inv_off, out_type};
    bind_and_push(s.combine, infos, push, sizeof push);
    const uint32_t y = uint32_t(std::min<int64_t>(s.T, 65535)), z = uint32_t((s.T + y - 1) / y);
    vkCmdDispatch(cb, groups_for(out_type ? uint64_t(s.n / 2) : uint64_t(s.n)), y, z);
  }
}

void UnfusedChain::record_sorted(VkCommandBuffer cb) const {
  const State& s = *st_;
  for (size_t i = 0; i < s.sorted.size(); ++i) {
    if (i > 0) compute_barrier(cb);
    vkgmm::GmmOperands ops{s.sorted_lhs.view(), s.inst->buf_b[i].view(), s.sorted_out.view()};
    if (i > 0) ops.existing_out = s.sorted_out.view();
    s.sorted[i].record(cb, ops);
  }
}

std::vector<Output> UnfusedChain::download() const {
  const State& s = *st_;
  return {{"out", bench::download(s.out, vkgmm::DType::f32, size_t(s.T * s.n)), s.k}};
}

std::vector<Output> UnfusedChain::download_sorted() const {
  const State& s = *st_;
  const std::vector<float> sorted = bench::download(s.sorted_out, vkgmm::DType::f32, size_t(s.S * s.n));
  std::vector<float> slots(sorted.size());
  for (int64_t i = 0; i < s.S; ++i)
    std::copy_n(sorted.begin() + i * s.n, s.n, slots.begin() + int64_t(s.perm[size_t(i)]) * s.n);
  return {{"out_slots", std::move(slots), s.k}};
}

void UnfusedChain::poison_outputs() const { fill_with_nan(st_->inst->ctx, {&st_->out, &st_->sorted_out}); }

uint32_t UnfusedChain::device_status() const {
  uint32_t word = 0;
  st_->status.download(&word, 4);
  return word;
}

}  // namespace bench
