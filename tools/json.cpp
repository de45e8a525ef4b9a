#include "json.hpp"

#include <cstdio>

namespace tool {

std::string json_string(const std::string& s) {
  std::string r = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      r += buf;
    } else {
      r += static_cast<char>(c);
    }
  }
  return r + "\"";
}

std::string json_strings(const std::vector<std::string>& list) {
  std::string r = "[";
  for (size_t i = 0; i < list.size(); ++i) r += (i ? ", " : "") + json_string(list[i]);
  return r + "]";
}

}  // namespace tool
