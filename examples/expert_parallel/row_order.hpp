// The receiving rank's one permutation: rows arrive grouped by sender (each sender's sorted by expert),
// gmm and tgmm take them grouped by expert (group sizes), and results go back grouped by sender again.
#pragma once

#include <cstdint>
#include <vector>

#include "exchange.hpp"

namespace ep {

enum class RowOrder { by_sender, by_expert };

// rows [counts.total_received(), width] in order `from` -> the same rows in the other order. Within one
// (sender, expert) segment the order is kept, so by_expert -> by_sender undoes by_sender -> by_expert.
std::vector<float> reorder_rows(const Counts& counts, RowOrder from, const std::vector<float>& rows, int64_t width);

}  // namespace ep
