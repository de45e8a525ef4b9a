// A tiling as text, "TM,TK,TN": how `vkgmm run --tiling`, `vkgmm bench --tiling` and the bench's tiling
// cache spell it, written and read in one place so that what one prints the others accept.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "vkgmm/types.hpp"

namespace tool {

std::string tiling_text(const vkgmm::Tiling& t);

// Three positive decimal integers separated by commas, nothing else. On failure, `why` (when given) says
// which rule broke: "expected TM,TK,TN (three positive integers)" or "every value must be positive".
std::optional<vkgmm::Tiling> parse_tiling(std::string_view text, std::string* why = nullptr);

}  // namespace tool
