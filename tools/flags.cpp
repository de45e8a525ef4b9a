#include "flags.hpp"

#include <charconv>
#include <string_view>

#include "vkgmm/types.hpp"

namespace tool {

bool wants_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

std::optional<int64_t> parse_int(std::string_view text, int64_t lo, int64_t hi) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) return std::nullopt;
  return v;
}

namespace {

void replace_all(std::string& text, std::string_view key, const std::string& with) {
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + with.size()))
    text.replace(at, key.size(), with);
}

// "q8_0 32/34, q4_0 32/18, ...": each block format's values and bytes per block.
std::string block_sizes() {
  std::string sizes;
  for (vkgmm::DType t : vkgmm::block_formats())
    sizes += (sizes.empty() ? "" : ", ") + std::string(vkgmm::dtype_name(t)) + " " +
             std::to_string(vkgmm::block_elements(t)) + "/" + std::to_string(vkgmm::block_bytes(t));
  return sizes;
}

}  // namespace

std::string with_block_formats(std::string text) {
  replace_all(text, "{formats}", vkgmm::block_format_names());
  replace_all(text, "{sizes}", block_sizes());
  return text;
}

}  // namespace tool
