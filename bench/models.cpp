// The model table and the layer a model preset runs (see models.hpp). Figures: the models' config.json on
// Hugging Face, cited per row and in bench/README.md.
#include "models.hpp"

#include <algorithm>

namespace bench {

const std::vector<ModelSpec>& model_specs() {
  constexpr vkgmm::Activation swiglu = vkgmm::Activation::swiglu;
  static const std::vector<ModelSpec> specs = {
      {"mixtral-8x7b", "Mixtral-8x7B-v0.1", 8, 2, 4096, 14336, false, swiglu, vkgmm::DType::bf16, std::nullopt,
       "https://huggingface.co/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json", ""},
      {"qwen3-30b-a3b", "Qwen3-30B-A3B", 128, 8, 2048, 768, false, swiglu, vkgmm::DType::bf16, std::nullopt,
       "https://huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json", ""},
      {"deepseek-v2-lite", "DeepSeek-V2-Lite", 64, 6, 2048, 1408, false, swiglu, vkgmm::DType::bf16, std::nullopt,
       "https://huggingface.co/deepseek-ai/DeepSeek-V2-Lite/blob/main/config.json",
       "the 2 shared experts every token also runs are a dense FFN, not benched"},
      {"gpt-oss-20b", "gpt-oss-20b", 32, 4, 2880, 2880, true, vkgmm::Activation::swiglu_oai, vkgmm::DType::bf16,
       vkgmm::DType::mxfp4, "https://huggingface.co/openai/gpt-oss-20b/blob/main/config.json", ""},
  };
  return specs;
}

const ModelSpec* find_model(const std::string& name) {
  for (const ModelSpec& m : model_specs())
    if (name == m.name) return &m;
  return nullptr;
}

const std::vector<int64_t>& default_model_tokens() {
  static const std::vector<int64_t> tokens = {1, 8, 512, 4096};
  return tokens;
}

int64_t scaled_size(int64_t size, int64_t scale, int64_t quantum) {
  const int64_t quanta = (size + scale * quantum / 2) / (scale * quantum);  // size / S / quantum, rounded
  return std::max<int64_t>(1, quanta) * quantum;
}

std::string ModelLayer::name() const { return std::string(model->name) + "/t" + std::to_string(tokens); }

std::string make_model_layer(const ModelSpec& m, int64_t scale, int64_t tokens, vkgmm::DType dtype,
                             std::optional<vkgmm::DType> weights, std::optional<vkgmm::DType> down_weights,
                             uint32_t seed, ModelLayer& out) {
  const vkgmm::DType wt = weights.value_or(dtype), down_wt = down_weights.value_or(wt);
  // Both sizes whole blocks of both formats: each is one projection's k and the other's n.
  const vkgmm::DType widest = vkgmm::block_elements(down_wt) > vkgmm::block_elements(wt) ? down_wt : wt;
  const int64_t quantum = std::max<int64_t>(32, int64_t(vkgmm::block_elements(widest)));
  out = ModelLayer{};
  out.model = &m;
  out.scale = scale;
  out.tokens = tokens;
  const int64_t hidden = scale == 1 ? m.hidden : scaled_size(m.hidden, scale, quantum);
  const int64_t ffn = scale == 1 ? m.expert_size : scaled_size(m.expert_size, scale, quantum);
  for (const int64_t k : {hidden, ffn})
    if (k % quantum)
      return std::string(m.name) + ": k = " + std::to_string(k) + " is not whole " + vkgmm::dtype_name(widest) +
             " blocks of " + std::to_string(quantum) + " values";
  Workload w;
  w.m = tokens, w.groups = m.experts, w.top_k = m.top_k, w.seed = seed;
  w.dtype = dtype;
  if (vkgmm::is_quantized(wt)) w.rhs_format = wt;
  w.bias = m.bias;
  make_routing(w);  // one router for both projections: the same ids and weights
  // Gate/up: [T, hidden] gathered by ids -> [gate | up] (2 * ffn) -> the model's gated activation, per slot
  // in the activations' type (what the down projection reads).
  out.up = w;
  out.up.name = out.name() + "/up";
  out.up.k = hidden, out.up.n = 2 * ffn;
  out.up.activation = m.activation, out.up.combine = false, out.up.slots_type = dtype;
  // Down: the slots' [T, top_k, ffn] -> [T, hidden], combined in token order with the router's weights.
  out.down = w;
  out.down.name = out.name() + "/down";
  out.down.k = ffn, out.down.n = hidden;
  out.down.lhs_per_slot = true, out.down.combine = true;
  out.down.rhs_format.reset();
  if (vkgmm::is_quantized(down_wt)) out.down.rhs_format = down_wt;
  return "";
}

}  // namespace bench
