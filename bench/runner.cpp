// Instance: inputs, buffers, plans and one recorded call of a workload.
#include "runner.hpp"

#include "problems.hpp"

#include <stdexcept>

#include "vkgmm/internals.hpp"  // the memory type of vkgmm's buffers, for the app copies
#include "vkgmm/plan_pipelines.hpp"  // a gmm plan's tile heights per group (describe)

#include <algorithm>
#include <random>

#include "tuning.hpp"
#include "vkgmm/convert.hpp"
#include "vkgmm/quant.hpp"

namespace bench {

std::vector<float> random_values(size_t count, vkgmm::DType t, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = vkgmm::round_to(t, u(rng));
  return v;
}

namespace {

int64_t largest_group(const Workload& w) {
  return w.group_sizes.empty() ? 0 : *std::max_element(w.group_sizes.begin(), w.group_sizes.end());
}

}  // namespace

QuantizedWeights quantized_weights(const vkgmm::DType format, int64_t experts, int64_t n, int64_t k, std::mt19937& rng) {
  const uint64_t count = uint64_t(experts * n * k);
  const std::vector<float> x = random_values(size_t(count), vkgmm::DType::f32, rng);
  QuantizedWeights q;
  q.blocks = vkgmm::quant::quantize(format, x.data(), count);
  q.values = vkgmm::quant::dequantize_experts(format, q.blocks.data(), experts, n, k);
  return q;
}

vkgmm::Buffer upload_bytes(vkgmm::Context& ctx, std::vector<uint8_t> bytes) {
  bytes.resize(std::max<size_t>(4, (bytes.size() + 3) / 4 * 4), 0);
  vkgmm::Buffer buf = ctx.create_buffer(bytes.size());
  buf.upload(bytes.data(), bytes.size());
  return buf;
}

size_t buffer_bytes(vkgmm::DType t, size_t count) {
  return std::max<size_t>(4, count * vkgmm::dtype_size(t));
}

vkgmm::Buffer upload(vkgmm::Context& ctx, vkgmm::DType t, const std::vector<float>& values) {
  std::vector<uint8_t> bytes = vkgmm::encode(t, values);
  bytes.resize(buffer_bytes(t, values.size()), 0);
  vkgmm::Buffer buf = ctx.create_buffer(bytes.size());
  buf.upload(bytes.data(), bytes.size());
  return buf;
}

vkgmm::Buffer zeros(vkgmm::Context& ctx, vkgmm::DType t, size_t count) {
  const std::vector<uint8_t> bytes(buffer_bytes(t, count), 0);
  vkgmm::Buffer buf = ctx.create_buffer(bytes.size());
  buf.upload(bytes.data(), bytes.size());
  return buf;
}

std::vector<float> download(const vkgmm::Buffer& buf, vkgmm::DType t, size_t count) {
  std::vector<uint8_t> bytes(buffer_bytes(t, count));
  buf.download(bytes.data(), bytes.size());
  return vkgmm::decode(t, bytes.data(), count);
}

Instance::Instance(vkgmm::Context& context, const Workload& w, const vkgmm::TilingChoice& tiling)
    : ctx(context), work(w) {
  plan(tiling);
  std::mt19937 rng(w.seed * 7919u + 17u);
  const size_t m = size_t(w.m), k = size_t(w.k), n = size_t(w.n), g = size_t(w.groups);
  const vkgmm::DType t = w.dtype;
  switch (w.op) {
    case Op::gmm:
      a = random_values(m * k, t, rng);
      if (w.quantized()) {
        // [G, n, k] blocks along k, as GGUF stores experts; b holds the values the blocks hold.
        QuantizedWeights q = quantized_weights(*w.rhs_format, w.groups, w.n, w.k, rng);
        b = std::move(q.values);
        buf_b = upload_bytes(ctx, std::move(q.blocks));
      } else {
        b = random_values(g * k * n, t, rng);
      }
      out0 = zeros(ctx, t, m * n);
      break;
    case Op::tgmm:
      a = random_values(k * m, t, rng);
      b = random_values(m * n, t, rng);
      out0 = zeros(ctx, t, g * k * n);
      break;
    case Op::backward:
      a = random_values(m * k, t, rng);
      b = random_values(g * k * n, t, rng);
      c = random_values(m * n, t, rng);
      out0 = zeros(ctx, t, m * k);
      out1 = zeros(ctx, t, g * k * n);
      buf_c = upload(ctx, t, c);
      break;
  }
  buf_a = upload(ctx, t, a);
  if (!w.quantized()) buf_b = upload(ctx, t, b);
  buf_sizes = ctx.create_buffer(w.group_sizes.size() * 4);
  buf_sizes.upload(w.group_sizes.data(), w.group_sizes.size() * 4);
  buf_status = ctx.create_buffer(4);
  const uint32_t zero = 0;
  buf_status.upload(&zero, 4);
}

vkgmm::GmmProblem Instance::gmm_problem() const {
  vkgmm::GmmProblem p = bench::gmm_problem(work);
  p.grid = grid_;
  return p;
}

vkgmm::TgmmProblem Instance::tgmm_problem() const {
  vkgmm::TgmmProblem p = bench::tgmm_problem(work);
  p.grid = grid_;
  return p;
}

namespace {

// The problem with `tiling` and `schedule`, and with device_sizes its group sizes moved to the device.
template <typename Problem>
Problem planned(Problem p, const vkgmm::TilingChoice& tiling, bool device_sizes, vkgmm::Schedule schedule) {
  p.tiling = tiling;
  if (schedule != vkgmm::Schedule::automatic) p.schedule = schedule;
  if (device_sizes) {
    p.device_group_sizes.count = static_cast<int64_t>(p.group_sizes.size());
    p.group_sizes.clear();
  }
  return p;
}

}  // namespace

void Instance::plan(const vkgmm::TilingChoice& tiling, bool device_sizes, vkgmm::Schedule schedule) {
  // Drop the old plans first so that a call's cost never includes keeping two sets alive.
  gmm_.reset();
  tgmm_.reset();
  backward_.reset();
  device_sizes_ = device_sizes;
  switch (work.op) {
    case Op::gmm: gmm_.emplace(ctx, planned(gmm_problem(), tiling, device_sizes, schedule)); break;
    case Op::tgmm: tgmm_.emplace(ctx, planned(tgmm_problem(), tiling, device_sizes, schedule)); break;
    case Op::backward: backward_.emplace(ctx, planned(gmm_problem(), tiling, device_sizes, schedule)); break;
  }
}

std::optional<vkgmm::Tiling> Instance::single_tiling() const {
  if (gmm_) return gmm_->tiling();
  if (tgmm_) return tgmm_->tiling();
  if (backward_ && backward_->d_lhs_plan().tiling() == backward_->d_rhs_plan().tiling())
    return backward_->d_lhs_plan().tiling();
  return std::nullopt;
}

vkgmm::Schedule Instance::single_schedule() const {
  if (gmm_) return gmm_->schedule();
  if (tgmm_) return tgmm_->schedule();
  if (backward_ && backward_->d_lhs_plan().schedule() == backward_->d_rhs_plan().schedule())
    return backward_->d_lhs_plan().schedule();
  return vkgmm::Schedule::automatic;
}

uint32_t Instance::device_status() const {
  uint32_t word = 0;
  buf_status.download(&word, 4);
  return word;
}

std::string Instance::tiling_text() const {
  if (gmm_) return bench::tiling_text(gmm_->tiling());
  if (tgmm_) return bench::tiling_text(tgmm_->tiling());
  if (backward_) return backward_tiling_text(*backward_);
  return "";
}

std::string backward_tiling_text(const vkgmm::GmmBackwardPlan& plan) {
  const std::string l = bench::tiling_text(plan.d_lhs_plan().tiling());
  const std::string r = bench::tiling_text(plan.d_rhs_plan().tiling());
  return l == r ? l : l + "/" + r;
}

// An app's own VkBuffer holding a copy of a vkgmm buffer's bytes, and vkgmm's borrowed Buffer of it.
struct Instance::AppCopy {
  VkDevice device = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkMemoryPropertyFlags flags = 0;
  vkgmm::Buffer borrowed;
  ~AppCopy() {
    borrowed = vkgmm::Buffer();  // vkgmm's views go before the buffer they view
    if (buffer) vkDestroyBuffer(device, buffer, nullptr);
    if (memory) vkFreeMemory(device, memory, nullptr);
  }
};

std::shared_ptr<Instance::AppCopy> Instance::app_buffer(VkDeviceSize bytes, VkBufferUsageFlags usage,
                                                        uint32_t memory_type) const {
  auto c = std::make_shared<AppCopy>();
  c->device = ctx.device();
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = bytes;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
              usage;
  if (vkCreateBuffer(c->device, &bci, nullptr, &c->buffer) != VK_SUCCESS)
    throw std::runtime_error("app buffers: vkCreateBuffer failed");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(c->device, c->buffer, &req);
  if (memory_type >= 32 || !(req.memoryTypeBits & (1u << memory_type)))
    throw std::runtime_error("app buffers: the VkBuffer cannot live in vkgmm's memory type " + std::to_string(memory_type));
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = memory_type;
  c->flags = vkgmm::internals::memory_type_flags(ctx, memory_type);
  if (vkAllocateMemory(c->device, &mai, nullptr, &c->memory) != VK_SUCCESS ||
      vkBindBufferMemory(c->device, c->buffer, c->memory, 0) != VK_SUCCESS)
    throw std::runtime_error("app buffers: memory for a buffer failed");
  c->borrowed = ctx.borrow_buffer(c->buffer, bytes, (usage & VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT) != 0,
                                  (usage & VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT) != 0);
  return c;
}

void Instance::transfer(const std::function<void(VkCommandBuffer)>& op) const { bench::transfer(ctx, op); }

void record_nan_fill(VkCommandBuffer cb, VkBuffer buffer) {
  vkCmdFillBuffer(cb, buffer, 0, VK_WHOLE_SIZE, 0xffffffffu);
}

void fill_with_nan(vkgmm::Context& ctx, std::initializer_list<const vkgmm::Buffer*> buffers) {
  transfer(ctx, [&](VkCommandBuffer cb) {
    for (const vkgmm::Buffer* b : buffers)
      if (b->handle()) record_nan_fill(cb, b->handle());
  });
}

void transfer(vkgmm::Context& ctx, const std::function<void(VkCommandBuffer)>& op) {
  ctx.submit_and_wait([&](VkCommandBuffer cb) {
    // After the earlier submissions' writes, before the later ones' reads and writes.
    VkMemoryBarrier before{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    before.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    before.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0,
                         nullptr, 0, nullptr);
    op(cb);
    VkMemoryBarrier after{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    after.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    after.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &after, 0,
                         nullptr, 0, nullptr);
  });
}

void Instance::copy_on_device(VkBuffer from, VkBuffer to, VkDeviceSize bytes) const {
  transfer([&](VkCommandBuffer cb) {
    const VkBufferCopy region{0, 0, bytes};
    vkCmdCopyBuffer(cb, from, to, 1, &region);
  });
}

void Instance::make_app_copies() {
  const vkgmm::Buffer* own[5] = {&buf_a, &buf_b, &buf_c, &out0, &out1};
  app_.assign(5, nullptr);
  for (size_t i = 0; i < 5; ++i) {
    if (!own[i]->handle()) continue;
    std::shared_ptr<AppCopy> c = app_buffer(own[i]->size(), VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT,
                                            vkgmm::internals::memory_type_of(ctx, *own[i]));
    if (i < 3) {
      copy_on_device(own[i]->handle(), c->buffer, own[i]->size());
    } else {
      // Outputs start as NaN, not as vkgmm's results: a call that wrote nothing to them cannot pass the
      // reference check.
      transfer([&](VkCommandBuffer cb) { record_nan_fill(cb, c->buffer); });
    }
    app_[i] = std::move(c);
  }
}

VkMemoryPropertyFlags Instance::app_memory_flags() const {
  for (const auto& c : app_)
    if (c) return c->flags;
  return 0;
}

VkMemoryPropertyFlags Instance::own_memory_flags() const {
  return vkgmm::internals::memory_type_flags(ctx, vkgmm::internals::memory_type_of(ctx, buf_a));
}

VkDeviceSize Instance::workspace_bytes() const {
  VkDeviceSize bytes = 0;
  if (gmm_) bytes = gmm_->workspace_bytes();
  if (tgmm_) bytes = tgmm_->workspace_bytes();
  if (backward_) bytes = backward_->workspace_bytes();
  return bytes;
}

void Instance::make_workspaces() {
  const VkDeviceSize bytes = workspace_bytes();
  if (bytes == 0) throw std::runtime_error("device grids: the plans have no workspace (not the device path)");
  // In the memory vkgmm gives the largest operand (device-local wherever buffers that large are).
  const vkgmm::Buffer& largest = buf_a.size() >= buf_b.size() ? buf_a : buf_b;
  const uint32_t type = vkgmm::internals::memory_type_of(ctx, largest);
  workspaces_[0] = app_buffer(bytes, VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT, type);
  workspaces_[1] = app_buffer(bytes, 0, type);
}

vkgmm::BufferView Instance::workspace_view() const {
  if (!device_sizes_ || workspace_ == Workspace::plans_own) return {};
  return workspaces_[workspace_ == Workspace::indirect ? 0 : 1]->borrowed.view();
}

const vkgmm::Buffer& Instance::pick(const vkgmm::Buffer& own, size_t index) const {
  return app_mode_ && index < app_.size() && app_[index] ? app_[index]->borrowed : own;
}

std::vector<float> Instance::download_from(const vkgmm::Buffer& own, size_t index, size_t count) const {
  // The app's copy back into vkgmm's buffer (overwriting what vkgmm's own call left there), whose download
  // reads it, mapped or staged.
  if (app_mode_ && index < app_.size() && app_[index]) copy_on_device(app_[index]->buffer, own.handle(), own.size());
  return bench::download(own, work.dtype, count);
}

void Instance::record(VkCommandBuffer cb) const {
  // The device path: the sizes, the workspace (the plans' own unless one of the bench's is in use), the
  // status word.
  const vkgmm::BufferView sizes = device_sizes_ ? buf_sizes.view() : vkgmm::BufferView{};
  const vkgmm::BufferView status = device_sizes_ ? buf_status.view() : vkgmm::BufferView{};
  const vkgmm::BufferView a = pick(buf_a, 0).view(), b = pick(buf_b, 1).view(), c = pick(buf_c, 2).view();
  const vkgmm::BufferView o0 = pick(out0, 3).view(), o1 = pick(out1, 4).view();
  const vkgmm::BufferView work = workspace_view();
  if (gmm_) {
    vkgmm::GmmOperands ops;
    ops.lhs = a, ops.rhs = b, ops.out = o0;
    ops.group_sizes = sizes, ops.workspace = work, ops.status = status;
    gmm_->record(cb, ops);
  }
  if (tgmm_) {
    vkgmm::TgmmOperands ops;
    ops.lhs = a, ops.rhs = b, ops.out = o0;
    ops.group_sizes = sizes, ops.workspace = work, ops.status = status;
    tgmm_->record(cb, ops);
  }
  if (backward_) {
    vkgmm::GmmBackwardOperands ops;
    ops.lhs = a, ops.rhs = b, ops.d_out = c, ops.d_lhs = o0, ops.d_rhs = o1;
    ops.group_sizes = sizes, ops.workspace = work, ops.status = status;
    backward_->record(cb, ops);
  }
}

namespace {

std::string view_text(const char* name, const vkgmm::BufferView& v) {
  if (!v.buffer) return std::string(" ") + name + "=-";
  return std::string(" ") + name + "=" + std::to_string(v.offset) + "+" + std::to_string(v.size);
}

const char* grid_text(vkgmm::Grid g) {
  return g == vkgmm::Grid::persistent ? "persistent" : g == vkgmm::Grid::per_visit ? "per_visit" : "automatic";
}

}  // namespace

std::string Instance::describe() const {
  const vkgmm::BufferView sizes = device_sizes_ ? buf_sizes.view() : vkgmm::BufferView{};
  const vkgmm::BufferView a = pick(buf_a, 0).view(), b = pick(buf_b, 1).view(), c = pick(buf_c, 2).view();
  const vkgmm::BufferView o0 = pick(out0, 3).view(), o1 = pick(out1, 4).view();
  std::string s = std::string("op=") + op_name(work.op) + " tiling=" + tiling_text() + " grid=" + grid_text(grid_) +
                  " sizes=" + (device_sizes_ ? "device" : "host") + " buffers=" + (app_mode_ ? "app" : "own");
  if (gmm_) {
    const vkgmm::GmmOperands ops{a, b, o0, {}, sizes, workspace_view(), {}};
    s += " texel=" + std::to_string(gmm_->texel_loads(ops)) + " tiles=" + std::to_string(gmm_->num_tiles()) +
         " metadata=" + std::to_string(gmm_->metadata_bytes()) + " workspace=" + std::to_string(gmm_->workspace_bytes());
    // Tile heights per group: the op's passes, each its block's rows (tiling= is the first's).
    std::string heights;
    size_t passes = 0;
    for (const vkgmm::internals::PlanPipeline& p : vkgmm::internals::plan_pipelines(*gmm_))
      if (p.role == "op")
        for (const vkgmm::internals::PipelineConstant& k : p.constants)
          if (k.name == "TM") {
            if (passes++) heights += ",";
            heights += std::to_string(k.value);
          }
    if (passes > 1) s += " heights=" + heights;
  }
  if (tgmm_) {
    const vkgmm::TgmmOperands ops{a, b, o0, {}, sizes, workspace_view(), {}};
    s += " texel=" + std::to_string(tgmm_->texel_loads(ops)) + " metadata=" + std::to_string(tgmm_->metadata_bytes()) +
         " workspace=" + std::to_string(tgmm_->workspace_bytes());
  }
  if (backward_)
    s += " d_lhs_tiles=" + std::to_string(backward_->d_lhs_plan().num_tiles()) +
         " metadata=" + std::to_string(backward_->metadata_bytes()) +
         " workspace=" + std::to_string(backward_->workspace_bytes());
  return s + view_text("lhs", a) + view_text("rhs", b) + view_text("c", c) + view_text("out", o0) +
         view_text("out1", o1);
}

void Instance::poison_outputs() const { fill_with_nan(ctx, {&pick(out0, 3), &pick(out1, 4)}); }

std::vector<Output> Instance::download() const {
  const size_t m = size_t(work.m), k = size_t(work.k), n = size_t(work.n), g = size_t(work.groups);
  switch (work.op) {
    case Op::gmm: return {{"out", download_from(out0, 3, m * n), work.k}};
    case Op::tgmm: return {{"out", download_from(out0, 3, g * k * n), largest_group(work)}};
    case Op::backward:
      return {{"d_lhs", download_from(out0, 3, m * k), work.n},
              {"d_rhs", download_from(out1, 4, g * k * n), largest_group(work)}};
  }
  return {};
}

}  // namespace bench
