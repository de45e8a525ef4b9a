#include "row_order.hpp"

#include <algorithm>

namespace ep {

std::vector<float> reorder_rows(const Counts& counts, RowOrder from, const std::vector<float>& rows, int64_t width) {
  const int64_t experts = counts.experts_per_rank;
  // Where each (sender, expert) segment starts in either order.
  std::vector<int64_t> by_sender(counts.ranks * experts), by_expert(counts.ranks * experts);
  int64_t row = 0;
  for (int s = 0; s < counts.ranks; ++s)
    for (int64_t e = 0; e < experts; ++e) {
      by_sender[s * experts + e] = row;
      row += counts.recv_rows_of_expert[s * experts + e];
    }
  row = 0;
  for (int64_t e = 0; e < experts; ++e)
    for (int s = 0; s < counts.ranks; ++s) {
      by_expert[s * experts + e] = row;
      row += counts.recv_rows_of_expert[s * experts + e];
    }
  const std::vector<int64_t>& src = from == RowOrder::by_sender ? by_sender : by_expert;
  const std::vector<int64_t>& dst = from == RowOrder::by_sender ? by_expert : by_sender;
  std::vector<float> out(rows.size());
  for (size_t seg = 0; seg < src.size(); ++seg)
    std::copy_n(rows.begin() + src[seg] * width, counts.recv_rows_of_expert[seg] * width,
                out.begin() + dst[seg] * width);
  return out;
}

}  // namespace ep
