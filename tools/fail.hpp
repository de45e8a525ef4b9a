// The one way the command line reports a failure: "<program>: error: <message>" on one stderr line.
#pragma once

#include <string>

namespace tool {

// Prints the line and returns `status` (the exit status: 1 runtime, 2 arguments), so that a command can
// `return fail(2, ...)`. Newlines in `msg` (driver and validation messages can hold them) become spaces:
// scripts and tests read exactly one line per error. `program` is "vkgmm" or "vkgmm bench".
int fail(int status, std::string msg, const char* program = "vkgmm");

}  // namespace tool
