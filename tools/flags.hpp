// Command-line primitives the subcommands (run, info, bench) share. Each subcommand keeps its own loop
// over argv, because their grammars and messages differ; what they have in common is here, once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tool {

// --help or -h anywhere on the line (argv[0], the subcommand's name, excluded): help wins over every
// other problem on the line, so a user who asks for help never gets an error instead.
bool wants_help(int argc, char** argv);

// A decimal integer in [lo, hi], the whole of `text` (no sign other than '-', no spaces, no suffix);
// nothing otherwise. Strict on purpose: "--reps 5x" or "--group-offset ' 1'" is a typo to report, not
// a number to guess.
std::optional<int64_t> parse_int(std::string_view text, int64_t lo, int64_t hi);

// `text` (a usage or a message) with every "{formats}" replaced by the block formats' names
// (vkgmm::block_format_names()), so that no help lists them by hand.
std::string with_block_formats(std::string text);

}  // namespace tool
