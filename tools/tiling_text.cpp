#include "tiling_text.hpp"

#include <charconv>

namespace tool {

std::string tiling_text(const vkgmm::Tiling& t) {
  return std::to_string(t.tm) + "," + std::to_string(t.tk) + "," + std::to_string(t.tn);
}

std::optional<vkgmm::Tiling> parse_tiling(std::string_view text, std::string* why) {
  int64_t t[3];
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int i = 0; i < 3; ++i) {
    const auto [q, ec] = std::from_chars(p, end, t[i]);
    const bool sep_ok = i < 2 ? (q != end && *q == ',') : q == end;
    if (ec != std::errc() || !sep_ok) {
      if (why) *why = "expected TM,TK,TN (three positive integers)";
      return std::nullopt;
    }
    if (t[i] <= 0) {
      if (why) *why = "every value must be positive";
      return std::nullopt;
    }
    p = q + 1;
  }
  return vkgmm::Tiling{t[0], t[1], t[2]};
}

}  // namespace tool
