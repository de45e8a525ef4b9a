// `vkgmm info`: the device vkgmm would run on, its limits and the features vkgmm uses.
#pragma once

// argv[0] is the subcommand's own name ("info"). Returns 0, 2 for a bad option, 1 when no device works.
int info_main(int argc, char** argv);
