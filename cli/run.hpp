// `vkgmm run gmm|tgmm`: one grouped matmul from .npy files to a .npy file (see docs/contract.md).
#pragma once

// argv[0] is the subcommand's own name ("run"); argv[1] is the operation. Returns the exit status:
// 0 success, 2 usage or argument error, 1 runtime or device error (including a failed --check).
// Errors print exactly one line on stderr and leave no output file.
int run_main(int argc, char** argv);
