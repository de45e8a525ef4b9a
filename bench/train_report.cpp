#include "train_report.hpp"

#include <algorithm>

#include "format.hpp"
#include "json.hpp"

namespace bench {

std::string train_json(const Result& r) {
  if (!r.train) return ", \"train\": null";
  const TrainResult& t = *r.train;
  const bool ran = t.skipped.empty();
  const auto ms = [&](double x) { return json_number(ran ? std::optional<double>(x) : std::nullopt); };
  const std::optional<double> over = ran && t.forward_ms > 0 ? std::optional<double>(t.backward_ms / t.forward_ms) : std::nullopt;
  return ", \"train\": {\"forward_ms\": " + ms(t.forward_ms) + ", \"backward_ms\": " + ms(t.backward_ms) +
         ", \"backward_over_forward\": " + json_number(over) +
         ", \"forward_backward_ms\": " + ms(t.forward_backward_ms) +
         ", \"backward_in_step_ms\": " + ms(t.forward_backward_ms - t.forward_ms) +
         ", \"reps\": " + std::to_string(t.reps) + ", \"checked_tokens\": " + std::to_string(t.checked_tokens) +
         ", \"timed_calls\": " + std::to_string(t.timed_calls) + ", \"evictions\": " + std::to_string(t.evictions) +
         ", \"skipped\": " + (ran ? "null" : tool::json_string(t.skipped)) + "}";
}

void print_train_table(std::FILE* f, const std::vector<Result>& layers) {
  if (std::none_of(layers.begin(), layers.end(), [](const Result& r) { return r.train.has_value(); })) return;
  std::fprintf(f, "\n%-24s %5s %9s %9s %8s %10s %9s %5s %7s\n", "model layer (--train)", "T", "fwd ms", "bwd ms",
               "bwd/fwd", "fwd+bwd ms", "step-fwd", "reps", "checked");
  for (const Result& r : layers) {
    if (!r.train) continue;
    const TrainResult& t = *r.train;
    const ModelLayer& l = *r.layer;
    if (!t.skipped.empty()) {
      std::fprintf(f, "%-24s %5lld skipped: %s\n", l.name().c_str(), (long long)l.tokens, t.skipped.c_str());
      continue;
    }
    std::fprintf(f, "%-24s %5lld %9s %9s %8s %10s %9s %5d %7lld\n", l.name().c_str(), (long long)l.tokens,
                 ms_text(t.forward_ms).c_str(), ms_text(t.backward_ms).c_str(),
                 fixed(t.backward_ms / t.forward_ms, 2).c_str(), ms_text(t.forward_backward_ms).c_str(),
                 ms_text(t.forward_backward_ms - t.forward_ms).c_str(), t.reps, (long long)t.checked_tokens);
  }
  std::fprintf(f,
               "\nTraining (--train): the layer through vkgmm::MoeLayerPlan, its own router gmm and top-k included\n"
               "(inputs of its own; weights in a block format are frozen: no gradient of theirs). gpu ms medians of\n"
               "three calls timed alternately, each from evicted caches: fwd ms, record_forward alone; bwd ms,\n"
               "record_backward alone (reading the words the forward before it saved); fwd+bwd ms, both in one\n"
               "command buffer. bwd/fwd: bwd ms over fwd ms (the forward saves each slot's pre-activation, so the\n"
               "backward's matmuls are d_lhs's and the weights': about 2 forwards). step-fwd: fwd+bwd ms - fwd ms,\n"
               "the backward right after its forward.\n"
               "checked: tokens whose y and d_x rows matched the CPU reference before timing (every gradient also\n"
               "finite and not all zero).\n");
}

}  // namespace bench
