// The main loop's instruction mix, read from AMD disassembly as RADV's ACO prints it (labels "BB<n>:",
// one instruction per line, branches naming their target label).
//
// Loops are found from back edges: a branch (s_branch, s_cbranch_*) to a label at or above it closes a
// loop from that label to the branch. A loop's trip count, for loops nested in the main loop, is read
// from its exit compare and its induction step: the compare sets a register against a constant bound,
// an add of a constant step to that register runs in the loop, and the trip count is ceil(bound / step),
// counted from 0 (a staging loop `for (e = lid; e < N; e += invocations)` is counted for the first
// invocation: the most any invocation runs). Without such a pair the trip count is unknown and the loop
// counts once (Loop::trips_known false). The main loop is the loop issuing the most matrix instructions
// per iteration, or where no loop has any, the most FMAs, nested loops weighted by their trip counts;
// among loops with as many, the innermost.
//
// Counting: every instruction of the loop body once per iteration, both arms of a branch (a wave whose
// lanes diverge issues both; ACO's skips only help when every lane agrees), nested loops times their
// trips. FMA instructions: v_fma*/v_fmac*/v_fmaak/v_fmamk, v_mac_f32/v_mad_f32 (GCN's), v_pk_fma*,
// v_dot*: the share is of instructions (issue slots); `fma_work` counts the multiply-adds they do
// (packed and dot2: 2, dot4: 4, dot8: 8). Matrix instructions: v_wmma*/v_swmmac* (RDNA3 and later),
// v_mfma*/v_smfmac* (CDNA); `matrix_work` counts their multiply-adds per wave, M x N x K from the
// mnemonic (v_wmma_f32_16x16x16_f16: 4096; a CDNA multi-block MFMA counts one block). Shared loads: ds_read*/ds_load* (read2: two elements);
// global loads: buffer_load*/global_load*/tbuffer_load* (vector memory); scalar loads (s_load*,
// s_buffer_load*) are counted apart. Widths in bits from the mnemonic (dword = 32, dwordx4 = 128,
// b128 = 128, ushort/u16 = 16, ubyte/u8 = 8, read2 x 2).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gpu_report {

struct Instruction {
  std::string mnemonic, operands;
  int label = -1;   // for a label line: its number (BB<n>), and no mnemonic
  int target = -1;  // for a branch: the label it names
};

std::vector<Instruction> parse_disassembly(const std::string& text);

struct Loop {
  size_t begin = 0, end = 0;  // [begin, end]: the header label's line to the back edge
  double trips = 1;
  bool trips_known = false;
  int parent = -1;  // index of the innermost loop enclosing it
};

struct Mix {
  bool found = false;  // a loop holding FMAs or matrix instructions exists
  size_t loop_begin = 0, loop_end = 0;  // the main loop's lines in the parsed listing
  long k_per_iteration = 0;  // the main loop's induction step (0: not found)
  double instructions = 0, fma = 0, fma_work = 0, matrix = 0, matrix_work = 0, valu = 0, salu = 0, branches = 0,
         waits = 0;
  double shared_loads = 0, shared_stores = 0, global_loads = 0, scalar_loads = 0, barriers = 0;
  std::map<int, double> shared_load_bits, global_load_bits;  // width in bits -> loads per iteration
  int nested_loops = 0, unknown_trips = 0;
  double fma_share() const { return instructions > 0 ? fma / instructions : 0; }
  // Of the vector ALU's instructions only (FMAs included): what bounds the FMA rate when the other
  // instructions issue beside another wave's (GCN and RDNA issue one instruction of each type per cycle).
  double fma_valu_share() const { return valu > 0 ? fma / valu : 0; }
  // The loop's unit of work, which loads are counted per: its matrix instructions, or without any its FMAs.
  double ops() const { return matrix > 0 ? matrix : fma; }
  double shared_bytes() const;  // shared-memory bytes loaded per iteration
  double global_bytes() const;
};

std::vector<Loop> find_loops(const std::vector<Instruction>& code);
Mix main_loop_mix(const std::vector<Instruction>& code);

// Classification of one mnemonic (exposed for the tests).
bool is_fma(const std::string& mnemonic);
double fma_work(const std::string& mnemonic);
bool is_matrix(const std::string& mnemonic);
double matrix_work(const std::string& mnemonic);
int shared_load_bits(const std::string& mnemonic);  // 0: not a shared-memory load
int global_load_bits(const std::string& mnemonic);  // 0: not a vector-memory load

}  // namespace gpu_report
