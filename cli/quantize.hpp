// `vkgmm quantize --format F --in W.npy --out Q.npy`: expert weights in one of GGUF's block formats.
#pragma once

// argv[0] is the subcommand's own name ("quantize"). Returns 0, 2 for a bad command line or input file,
// 1 when the output cannot be written. Errors print exactly one line on stderr and leave no output file.
int quantize_main(int argc, char** argv);
