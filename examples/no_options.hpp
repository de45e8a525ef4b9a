// The command line of an example that takes no options: --help (or -h) prints what it does, and any other
// argument is refused by name rather than ignored. Header-only, so that each example still builds on its
// own against an installed vkgmm.
#pragma once

#include <cstdio>
#include <cstring>

// Returns the exit status the program should end with (0 after --help, 2 for an unknown argument), or
// -1 when it should run.
inline int handle_no_options(int argc, char** argv, const char* program, const char* help) {
  bool wants_help = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      wants_help = true;
    } else {
      std::fprintf(stderr, "%s: %s: unknown argument (the example takes none; see --help)\n", program, argv[i]);
      return 2;
    }
  }
  if (!wants_help) return -1;
  std::printf("usage: %s\n%s", program, help);
  return 0;
}
