#include "fail.hpp"

#include <algorithm>
#include <cstdio>

namespace tool {

int fail(int status, std::string msg, const char* program) {
  std::replace(msg.begin(), msg.end(), '\n', ' ');
  std::replace(msg.begin(), msg.end(), '\r', ' ');
  std::fprintf(stderr, "%s: error: %s\n", program, msg.c_str());
  return status;
}

}  // namespace tool
