// JSON output helpers shared by `vkgmm info --json` and `vkgmm bench --json`.
#pragma once

#include <string>
#include <vector>

namespace tool {

// s as a JSON string literal, quoted and escaped (device and driver names come from the driver: escape
// them rather than trust them).
std::string json_string(const std::string& s);
// A JSON array of those strings.
std::string json_strings(const std::vector<std::string>& list);

}  // namespace tool
