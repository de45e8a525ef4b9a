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

std::string with_block_formats(std::string text) {
  const std::string_view key = "{formats}";
  const std::string names = vkgmm::block_format_names();
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + names.size()))
    text.replace(at, key.size(), names);
  return text;
}

}  // namespace tool
