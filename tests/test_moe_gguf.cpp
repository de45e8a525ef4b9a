// A quantized MoE model file read the way an engine walks one: a GGUF file whose layers and projections
// hold formats of their own (Q4_K_M's q4_K gate and up beside q6_K down, then iq4_xs beside q3_K, then
// q5_0 beside q2_K), each layer's router and experts loaded through the GGUF reader into a MoeLayerPlan, the layers
// chained (each takes the previous one's y), every y checked against the float64 layer of the weights the
// file holds.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>

#include "gguf.hpp"
#include "gguf_writer.hpp"
#include "gpu_harness.hpp"
#include "moe_reference.hpp"
#include "vkgmm/quant.hpp"

namespace vkgmm::test {
namespace {

constexpr int64_t kTokens = 6, kModel = 256, kFf = 256, kExperts = 4, kTopK = 2;

struct LayerFormats {
  DType gate_up, down;
};

std::vector<uint8_t> quantized(DType t, const std::vector<float>& v) { return quant::quantize(t, v.data(), v.size()); }

std::vector<uint8_t> bytes_of(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

int64_t uint_kv(const gguf::File& f, const std::string& key) {
  const gguf::KeyValue* kv = f.find_kv(key);
  if (!kv) throw std::runtime_error(key + ": not in the file");
  return int64_t(kv->value.as_uint());
}

// The file: the model's sizes as qwen3moe keys, and per layer ffn_gate_inp (the router, f32, ggml dims [d,
// E]), ffn_gate_exps and ffn_up_exps ([d, f, E]) and ffn_down_exps ([f, d, E]) in the layer's formats.
std::string write_model(const std::vector<LayerFormats>& layers, std::mt19937& rng) {
  gguf_test::Writer w;
  w.kv("general.architecture", gguf_test::str("qwen3moe"));
  w.kv("qwen3moe.block_count", gguf_test::u32(uint32_t(layers.size())));
  w.kv("qwen3moe.embedding_length", gguf_test::u32(kModel));
  w.kv("qwen3moe.expert_feed_forward_length", gguf_test::u32(kFf));
  w.kv("qwen3moe.expert_count", gguf_test::u32(kExperts));
  w.kv("qwen3moe.expert_used_count", gguf_test::u32(kTopK));
  std::normal_distribution<float> d(0.0f, 0.25f);
  auto values = [&](int64_t n, float scale) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = scale * d(rng);
    return v;
  };
  for (size_t l = 0; l < layers.size(); ++l) {
    const std::string blk = "blk." + std::to_string(l) + ".";
    const uint64_t E = kExperts, D = kModel, F = kFf;
    w.tensor({blk + "ffn_gate_inp.weight", {D, E}, gguf::ggml_of_dtype(DType::f32), bytes_of(values(E * D, 1.0f))});
    for (const char* name : {"ffn_gate_exps", "ffn_up_exps"})
      w.tensor({blk + name + ".weight", {D, F, E}, gguf::ggml_of_dtype(layers[l].gate_up),
                quantized(layers[l].gate_up, values(E * F * D, 0.25f))});
    w.tensor({blk + "ffn_down_exps.weight", {F, D, E}, gguf::ggml_of_dtype(layers[l].down),
              quantized(layers[l].down, values(E * D * F, 0.25f))});
  }
  const std::vector<uint8_t> bytes = w.bytes();
  const std::string path = ::testing::TempDir() + "vkgmm_moe_model.gguf";
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  return path;
}

// One layer of the file as an engine loads it: the router transposed to [d, E]; gate and up joined per
// expert into w_up [E, 2f, d] (each expert's gate rows, then its up rows: whole blocks, so bytes); w_down
// [E, d, f] as stored. The float64 weights alongside, in the reference's layouts.
struct LoadedLayer {
  MoeLayerProblem problem;
  std::vector<float> router_w;
  std::vector<uint8_t> w_up, w_down;
  MoeWeights reference;
};

LoadedLayer load_layer(const gguf::File& f, int layer) {
  const std::string blk = "blk." + std::to_string(layer) + ".";
  LoadedLayer l;
  MoeLayerProblem& p = l.problem;
  p.d_model = uint_kv(f, "qwen3moe.embedding_length"), p.d_ff = uint_kv(f, "qwen3moe.expert_feed_forward_length");
  p.num_experts = uint_kv(f, "qwen3moe.expert_count"), p.top_k = uint_kv(f, "qwen3moe.expert_used_count");
  p.tokens = kTokens;
  p.activation = Activation::swiglu;
  const int64_t E = p.num_experts, D = p.d_model, F = p.d_ff;
  const gguf::Tensor* router = f.find_tensor(blk + "ffn_gate_inp.weight");
  EXPECT_TRUE(router && router->dtype == DType::f32);
  const std::vector<uint8_t> router_bytes = f.read_bytes(*router);
  l.router_w.resize(size_t(D * E));
  for (int64_t e = 0; e < E; ++e)
    for (int64_t i = 0; i < D; ++i) std::memcpy(&l.router_w[size_t(i * E + e)], &router_bytes[size_t((e * D + i) * 4)], 4);
  const gguf::ExpertTensor gate = gguf::load_expert_tensor(f, blk + "ffn_gate_exps.weight");
  const gguf::ExpertTensor up = gguf::load_expert_tensor(f, blk + "ffn_up_exps.weight");
  const gguf::ExpertTensor down = gguf::load_expert_tensor(f, blk + "ffn_down_exps.weight");
  EXPECT_EQ(gate.dtype, up.dtype);  // one w_up: gate and up in one type
  EXPECT_TRUE(gate.E == E && gate.n == F && gate.k == D && down.E == E && down.n == D && down.k == F);
  p.weight_type = gate.dtype;
  p.down_weight_type = down.dtype;
  const size_t per_expert = gate.bytes.size() / size_t(E);
  for (int64_t e = 0; e < E; ++e)
    for (const gguf::ExpertTensor* t : {&gate, &up})
      l.w_up.insert(l.w_up.end(), t->bytes.begin() + ptrdiff_t(size_t(e) * per_expert),
                    t->bytes.begin() + ptrdiff_t(size_t(e + 1) * per_expert));
  l.w_down = down.bytes;
  // The reference's layouts: w_up [E, d, 2f], w_down [E, f, d].
  const std::vector<float> wu = quant::dequantize_experts(p.weight_type, l.w_up.data(), E, 2 * F, D);
  const std::vector<float> wd = quant::dequantize_experts(p.down_type(), l.w_down.data(), E, D, F);
  MoeWeights& r = l.reference;
  r.router_w.assign(l.router_w.begin(), l.router_w.end());
  r.w_up.resize(wu.size());
  r.w_down.resize(wd.size());
  for (int64_t e = 0; e < E; ++e) {
    for (int64_t c = 0; c < 2 * F; ++c)
      for (int64_t i = 0; i < D; ++i) r.w_up[size_t((e * D + i) * 2 * F + c)] = wu[size_t((e * 2 * F + c) * D + i)];
    for (int64_t c = 0; c < D; ++c)
      for (int64_t i = 0; i < F; ++i) r.w_down[size_t((e * F + i) * D + c)] = wd[size_t((e * D + c) * F + i)];
  }
  return l;
}

Buffer upload_bytes(Context& ctx, const void* data, size_t bytes) {
  Buffer b = ctx.create_buffer(bytes);
  b.upload(data, bytes);
  return b;
}

TEST_F(DeviceTest, MoeModelWithMixedFormatsRunsLayerByLayerFromGguf) {
  const std::vector<LayerFormats> formats = {
      {DType::q4_K, DType::q6_K}, {DType::iq4_xs, DType::q3_K}, {DType::q5_0, DType::q2_K}};
  std::mt19937 rng(47);
  const gguf::File file = gguf::read(write_model(formats, rng));
  ASSERT_EQ(uint_kv(file, "qwen3moe.block_count"), int64_t(formats.size()));
  std::vector<float> x = random_values(size_t(kTokens * kModel), DType::f32, rng);
  for (int layer = 0; layer < int(formats.size()); ++layer) {
    SCOPED_TRACE("layer " + std::to_string(layer));
    LoadedLayer l = load_layer(file, layer);
    EXPECT_EQ(l.problem.weight_type, formats[size_t(layer)].gate_up);
    EXPECT_EQ(l.problem.down_weight_type, formats[size_t(layer)].down);
    Context& c = ctx();
    const MoeLayerPlan plan(c, l.problem);
    const MoeLayerSizes s = plan.sizes();
    ASSERT_EQ(s.w_up, l.w_up.size());
    ASSERT_EQ(s.w_down, l.w_down.size());
    // The public projections are the plan's: their rhs sizes are the layer's weights'.
    EXPECT_EQ(l.problem.down_type(), formats[size_t(layer)].down);
    EXPECT_EQ(GmmPlan(c, moe_layer_projection(l.problem, true)).sizes().rhs, s.w_up);
    EXPECT_EQ(GmmPlan(c, moe_layer_projection(l.problem, false)).sizes().rhs, s.w_down);
    Buffer bx = upload(c, DType::f32, x), router = upload(c, DType::f32, l.router_w);
    Buffer w_up = upload_bytes(c, l.w_up.data(), l.w_up.size()), w_down = upload_bytes(c, l.w_down.data(), l.w_down.size());
    Buffer y = poisoned(c, s.y), status = status_word(c);
    MoeLayerOperands ops;
    ops.x = bx.view(), ops.router_w = router.view(), ops.w_up = w_up.view(), ops.w_down = w_down.view();
    ops.y = y.view(0, s.y), ops.status = status.view();
    c.submit_and_wait([&](VkCommandBuffer cb) { plan.record_forward(cb, ops); });
    expect_clean_status(status);
    const std::vector<float> got = download(y, DType::f32, s.y / 4);
    l.reference.x.assign(x.begin(), x.end());
    const std::vector<double> want = reference_layer(l.problem, l.reference);
    EXPECT_TRUE(all_close(got, std::vector<float>(want.begin(), want.end()), 2e-3, 2e-3));
    x = got;  // the next layer's input, as the model chains them
  }
}

}  // namespace
}  // namespace vkgmm::test
