// The main loop's instruction mix, read from the driver's disassembly. Three readers turn a listing into
// one list of classified instructions (Instruction::traits, normalized operands), so that the loops,
// their trip counts and the mix are found the same way for every ISA:
// - AMD, as RADV's ACO prints it (isa_aco.cpp): labels "BB<n>:", one instruction per line, branches
//   naming their target label.
// - NVIDIA, as NVK's NAK prints it (isa_nak.cpp): "block <n> L<m> [preds] -> {" ... "} -> [succs]",
//   instructions "dsts = op srcs" behind an optional "@p0" predicate. NAK lays out blocks in an order
//   where code that leaves a loop (the epilogue behind the exit test) can sit between the loop's header
//   and its back edge, so its loops are read from the successor lists it prints, not from the text; and
//   it lowers a loop's `break` to a flag that the block closing the loop tests, so a block that sets
//   that flag to a constant is read as leaving the loop (its copies run once, not every iteration).
// - Intel, as ANV prints its GEN assembly (isa_intel.cpp): labels "LABEL<n>:", structured control flow
//   whose loops run from a label to the `while` naming it; memory is a `send` whose message (the
//   indented line after it: "ugm MsgDesc: ( load, a32, d32, V4, ... bti )") tells the memory and width.
//
// Loops are found from back edges: a branch (or, where the listing gives them, a block's successor) to a
// label at or above it closes a loop: from that label to the branch (ACO, Intel), or the blocks reaching
// the branch without passing the header (NAK). A loop's trip count, for loops nested in the main loop, is
// read from its exit compare and its induction step: the compare sets a register against a constant
// bound, an add of a constant step to that register runs in the loop, and the trip count is
// ceil(bound / step), counted from 0 (a staging loop `for (e = lid; e < N; e += invocations)` is counted
// for the first invocation: the most any invocation runs). Without such a pair the trip count is unknown
// and the loop counts once (Loop::trips_known false). The main loop is the loop issuing the most matrix
// instructions per iteration, or where no loop has any, the most FMAs, nested loops weighted by their
// trip counts; among loops with as many, the innermost.
//
// Counting: every instruction of the loop body once per iteration, both arms of a branch (a wave whose
// lanes diverge issues both), nested loops times their trips. Counts are of instructions as issued by one
// wave, warp or hardware thread (an Intel SIMD8 `mad(8)` is one FMA, as a warp's `ffma` is).
// - FMA instructions: the share is of issue slots; `fma_work` counts the multiply-adds per lane. ACO:
//   v_fma*/v_fmac*/v_fmaak/v_fmamk, v_mac_f32/v_mad_f32 (GCN's), v_pk_fma* (2), v_dot* (dot2: 2, dot4: 4,
//   dot8: 8). NAK: ffma, dfma, hfma2 (2), idp4a (4). Intel: a float `mad` (fused), dp4a (4); a
//   half-float mad over twice the dispatch width does 2 per lane.
// - Matrix instructions, `matrix_work` their multiply-adds per wave: ACO v_wmma*/v_swmmac* (RDNA3+),
//   v_mfma*/v_smfmac* (CDNA), M x N x K from the mnemonic (a CDNA multi-block MFMA counts one block);
//   NAK hmma/imma, M x N x K from the shape (".m16n8k16" or ".16816": 2048); Intel dpas.<depth>x<repeat>:
//   exec size x repeat x depth x elements per dword of its B source (HF/BF 2, B/UB 4).
// - Loads, widths in bits per lane. Shared: ACO ds_read*/ds_load* (read2 x 2), NAK ld.shared.<type> and
//   ldsm (ldmatrix .x4: 128), Intel's slm messages. Global (vector memory): ACO buffer_load*/global_load*/
//   tbuffer_load*, NAK ld.global and texture/surface loads (width from their destination registers),
//   Intel ugm/tgm loads through a binding table, a flat or an a64 address. Scalar (uniform) loads apart:
//   ACO s_load*/s_buffer_load*, NAK ldc, Intel's transposed block loads (one block for the whole thread).
// - Local traffic (spills and scratch), which the report requires to be 0 in the main loop: ACO
//   scratch_*, NAK ld.local/st.local, Intel ugm messages through the scratch surface state ("ss").
// - Issue classes, one each: branches (control flow, NAK's reconvergence bookkeeping bssy/bsync/bclear and
//   Intel's if/else/endif included), waits (s_waitcnt/s_nop/s_delay_alu, NAK nop/depbar/membar, Intel
//   sync/fences), barriers, scalar loads, then vector ALU and scalar ALU. Scalar ALU is uniform work:
//   ACO's s_*, NAK's uniform datapath (destinations ur*/up*), Intel instructions over fewer channels than
//   the dispatch width with every channel enabled (WE_all: address and header arithmetic).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpu_report {

enum class Isa { aco, nak, intel };

// The ISA of a pipeline-executable internal representation by its name, when it is a disassembly this
// file reads: RADV's "Assembly", NVK's "NAK assembly", ANV's "GEN Assembly" (any case); NIR and other
// intermediate forms give nullopt.
std::optional<Isa> isa_of_representation(const std::string& name);

// What one instruction does, as its ISA's reader classified it.
struct Traits {
  bool fma = false, matrix = false;
  double fma_work = 0, matrix_work = 0;  // multiply-adds per lane (FMA) / per wave (matrix)
  // Issue classes: at most one of these is counted, in this order.
  bool branch = false, wait = false, barrier = false, scalar_load = false, valu = false, salu = false;
  int shared_load_bits = 0, global_load_bits = 0;  // 0: not such a load
  bool shared_store = false, local_load = false, local_store = false;
  bool compare = false;  // sets a condition from its sources (the loop-exit test candidates)
  bool add = false;      // an integer add of its sources into its first destination (the induction candidates)
};

struct Instruction {
  std::string mnemonic, operands;
  int label = -1;   // for a label line: its number (BB<n>, LABEL<n>, NAK's block number), and no mnemonic
  int target = -1;  // for a branch: the label it names
  // For a label line where the listing gives its block's successors (NAK): their labels.
  std::optional<std::vector<int>> successors;
  // Normalized operands: register names ("v11", "r20", "g75": no regions, types or subregisters) and
  // integer constants ("16", "0x80", "-1"); zero registers and null destinations dropped.
  std::vector<std::string> dests, sources;
  Traits traits;
};

std::vector<Instruction> parse_disassembly(const std::string& text, Isa isa = Isa::aco);

// One reader per ISA (isa_aco.cpp, isa_nak.cpp, isa_intel.cpp); parse_disassembly picks one.
std::vector<Instruction> parse_aco(const std::string& text);
std::vector<Instruction> parse_nak(const std::string& text);
std::vector<Instruction> parse_intel(const std::string& text);

struct Loop {
  size_t begin = 0, end = 0;  // the header label's line to the last back edge
  double trips = 1;
  bool trips_known = false;
  int parent = -1;  // index of the innermost loop enclosing it
  // The loop's lines: [begin, end] where it is laid out in one piece, else its blocks' ranges.
  std::vector<std::pair<size_t, size_t>> spans;
  bool contains(size_t line) const;
  size_t lines() const;
};

struct Mix {
  bool found = false;  // a loop holding FMAs or matrix instructions exists
  size_t loop_begin = 0, loop_end = 0;  // the main loop's lines in the parsed listing
  long k_per_iteration = 0;  // the main loop's induction step (0: not found)
  double instructions = 0, fma = 0, fma_work = 0, matrix = 0, matrix_work = 0, valu = 0, salu = 0, branches = 0,
         waits = 0;
  double shared_loads = 0, shared_stores = 0, global_loads = 0, scalar_loads = 0, barriers = 0;
  double local_loads = 0, local_stores = 0;  // spill/scratch traffic
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

// ACO's classification of one mnemonic (exposed for the tests).
bool is_fma(const std::string& mnemonic);
double fma_work(const std::string& mnemonic);
bool is_matrix(const std::string& mnemonic);
double matrix_work(const std::string& mnemonic);
int shared_load_bits(const std::string& mnemonic);  // 0: not a shared-memory load
int global_load_bits(const std::string& mnemonic);  // 0: not a vector-memory load

// Text helpers the readers share.
namespace isa_text {
inline bool starts(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
std::string trim(const std::string& s);
std::vector<std::string> words(const std::string& s);  // split at white space
std::optional<long> integer(const std::string& s);     // "16", "-1", "0x200"; else nullopt
}  // namespace isa_text

}  // namespace gpu_report
