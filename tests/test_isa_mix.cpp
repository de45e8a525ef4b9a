// The gpu-report's reading of disassembly (gpu_report/isa_*) on fixed listings: ACO's shaped like RADV's
// (a K loop with a staging loop nested in it, and the instruction classes), and NAK's and Intel's
// in tests/gpu_report/listings/: lines of NVK's and ANV's listings of vkgmm's pipelines (Mesa 25.0),
// arranged into the shapes to test (their real main loops nest no loop), and a trimmed real dpas loop.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "isa_mix.hpp"

namespace {

using namespace gpu_report;

std::string listing(const std::string& name) {
  std::ifstream f(std::string(VKGMM_ISA_LISTINGS_DIR) + "/" + name);
  EXPECT_TRUE(f.good()) << name;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

size_t line_of_label(const std::vector<Instruction>& code, int label) {
  for (size_t i = 0; i < code.size(); ++i)
    if (code[i].label == label) return i;
  ADD_FAILURE() << "no label " << label;
  return 0;
}

// The classification of a listing's first instruction.
Traits traits_of(const std::string& text, Isa isa) {
  for (const Instruction& i : parse_disassembly(text, isa))
    if (i.label < 0) return i.traits;
  ADD_FAILURE() << "no instruction in: " << text;
  return {};
}

// A K step of 16 (s11 += 16 against the push-constant k in s8), a staging loop of 0x200 / 0x100 = 2 trips
// (v11 from the invocation's index, += 256), then the FMAs of the step.
const char kListing[] = R"(BB0:
	s_mov_b32 s11, 0                                            ; be8b0380
BB1:
	s_cmp_ge_u32 s11, s8                                        ; bf09080b
	s_cbranch_scc1 BB9                                          ; bf850166
BB2:
	v_mov_b32_e32 v11, v0                                       ; 7e160300
BB3:
	v_cmpx_le_u32_e32 0x200, v11                                ; 7da616ff 00000200
	s_cbranch_scc0 BB5                                          ; bf840020
BB4:
	buffer_load_dword v12, v12, s[24:27], 0 offen               ; e0301000 80060c0c
	s_waitcnt vmcnt(0)                                          ; bf8c3f70
	ds_write_b32 v13, v12                                       ; d8340000 00000c0d
	v_add_nc_u32_e32 v11, 0x100, v11                            ; 4a1616ff 00000100
	s_branch BB3                                                ; bf82ffdb
BB5:
	s_barrier                                                   ; bf8a0000
	ds_read_b128 v[12:15], v11                                  ; dbfc0000 0c00000b
	ds_read2st64_b32 v[16:17], v11 offset1:1                    ; d8700100 1000000b
	v_fmac_f32_e32 v3, v15, v13                                 ; 56061b0f
	v_fmac_f32_e32 v4, v15, v17                                 ; 5608230f
	v_pk_fma_f16 v5, v1, v2, v5                                 ; cc0e4005 04160501
	v_dot2_f32_f16 v6, v1, v2, v6                               ; cc134006 041a0501
	s_add_u32 s11, s11, 16                                      ; 800b900b
	s_branch BB1                                                ; bf82fe98
BB9:
	s_endpgm                                                    ; bf810000
)";

TEST(IsaMix, ParsesLabelsInstructionsAndBranchTargets) {
  const std::vector<Instruction> code = parse_disassembly(kListing);
  ASSERT_EQ(code.size(), 28u);  // 7 labels, 21 instructions
  EXPECT_EQ(code[0].label, 0);
  EXPECT_EQ(code[1].mnemonic, "s_mov_b32");
  EXPECT_EQ(code[1].operands, "s11, 0");
  EXPECT_EQ(code[4].mnemonic, "s_cbranch_scc1");
  EXPECT_EQ(code[4].target, 9);
  const std::vector<Loop> loops = find_loops(code);
  ASSERT_EQ(loops.size(), 2u);
  EXPECT_EQ(loops[0].parent, -1);
  EXPECT_EQ(loops[1].parent, 0);
}

TEST(IsaMix, MainLoopCountsNestedLoopsWithTheirTrips) {
  const Mix m = main_loop_mix(parse_disassembly(kListing));
  ASSERT_TRUE(m.found);
  EXPECT_EQ(m.k_per_iteration, 16);
  // Outer: 12 instructions; the staging loop's 7, twice.
  EXPECT_DOUBLE_EQ(m.instructions, 12 + 2 * 7);
  EXPECT_DOUBLE_EQ(m.fma, 4);
  EXPECT_DOUBLE_EQ(m.fma_work, 1 + 1 + 2 + 2);  // packed and dot2: two multiply-adds each
  EXPECT_DOUBLE_EQ(m.fma_share(), 4.0 / 26.0);
  EXPECT_DOUBLE_EQ(m.valu, 5 + 2 * 2);  // v_mov and the four FMAs; v_cmpx and v_add twice
  EXPECT_DOUBLE_EQ(m.fma_valu_share(), 4.0 / 9.0);
  EXPECT_DOUBLE_EQ(m.shared_loads, 2);
  EXPECT_DOUBLE_EQ(m.shared_load_bits.at(128), 1);
  EXPECT_DOUBLE_EQ(m.shared_load_bits.at(64), 1);  // read2 of two dwords
  EXPECT_DOUBLE_EQ(m.shared_stores, 2);
  EXPECT_DOUBLE_EQ(m.global_loads, 2);
  EXPECT_DOUBLE_EQ(m.global_load_bits.at(32), 2);
  EXPECT_DOUBLE_EQ(m.shared_bytes(), 16 + 8);
  EXPECT_DOUBLE_EQ(m.global_bytes(), 8);
  EXPECT_DOUBLE_EQ(m.barriers, 1);
  EXPECT_DOUBLE_EQ(m.waits, 2);
  EXPECT_EQ(m.nested_loops, 1);
  EXPECT_EQ(m.unknown_trips, 0);
}

TEST(IsaMix, LoopWithoutAConstantBoundCountsOnceAndSaysSo) {
  // The staging loop's bound is a register (s9): its trip count cannot be read.
  std::string listing = kListing;
  listing.replace(listing.find("0x200, v11"), 10, "s9, v11");
  const Mix m = main_loop_mix(parse_disassembly(listing));
  ASSERT_TRUE(m.found);
  EXPECT_DOUBLE_EQ(m.instructions, 12 + 7);
  EXPECT_EQ(m.unknown_trips, 1);
}

TEST(IsaMix, NoFmaNoMainLoop) {
  const Mix m = main_loop_mix(parse_disassembly("BB0:\n\tv_add_nc_u32_e32 v1, 1, v1\n\ts_branch BB0\n"));
  EXPECT_FALSE(m.found);
  EXPECT_DOUBLE_EQ(m.fma_share(), 0);
}

TEST(IsaMix, MatrixInstructionsMakeTheMainLoop) {
  // A loop of FMAs (the epilogue's, say) beside a loop of fewer matrix instructions: the latter is the
  // main loop, and its loads are counted per matrix instruction.
  const Mix m = main_loop_mix(parse_disassembly("BB0:\n"
                                                "\tv_fmac_f32_e32 v1, v2, v3\n"
                                                "\tv_fmac_f32_e32 v4, v2, v3\n"
                                                "\tv_fmac_f32_e32 v5, v2, v3\n"
                                                "\ts_cbranch_scc1 BB0\n"
                                                "BB1:\n"
                                                "\tds_load_b64 v[10:11], v0\n"
                                                "\tds_load_b64 v[12:13], v0 offset:64\n"
                                                "\tv_wmma_f32_16x16x16_f16 v[20:27], v[10:17], v[30:37], v[20:27]\n"
                                                "\ts_cbranch_scc1 BB1\n"));
  ASSERT_TRUE(m.found);
  EXPECT_DOUBLE_EQ(m.matrix, 1);
  EXPECT_DOUBLE_EQ(m.matrix_work, 16 * 16 * 16);
  EXPECT_DOUBLE_EQ(m.fma, 0);
  EXPECT_DOUBLE_EQ(m.instructions, 4);
  EXPECT_DOUBLE_EQ(m.ops(), 1);
  EXPECT_DOUBLE_EQ(m.shared_loads / m.ops(), 2);
}

TEST(IsaMix, ClassifiesEachFamilysMnemonics) {
  for (const char* f : {"v_fma_f32", "v_fmac_f32_e32", "v_fmaak_f32", "v_mac_f32_e32", "v_mad_f32", "v_pk_fma_f16",
                        "v_dot2_f32_f16", "v_dot4_i32_i8", "v_fma_mix_f32"})
    EXPECT_TRUE(is_fma(f)) << f;
  for (const char* f : {"v_mad_u32_u24", "v_mad_u64_u32", "v_add_f32_e32", "v_mul_f32_e32", "s_add_u32"})
    EXPECT_FALSE(is_fma(f)) << f;
  EXPECT_DOUBLE_EQ(fma_work("v_dot4_i32_i8"), 4);
  EXPECT_DOUBLE_EQ(fma_work("v_fmac_f32_e32"), 1);
  for (const char* f : {"v_wmma_f32_16x16x16_f16", "v_wmma_f32_16x16x16_bf16", "v_swmmac_f32_16x16x32_f16",
                        "v_mfma_f32_32x32x8f16", "v_smfmac_f32_16x16x32_f16"})
    EXPECT_TRUE(is_matrix(f) && !is_fma(f)) << f;
  EXPECT_FALSE(is_matrix("v_fma_f32"));
  EXPECT_DOUBLE_EQ(matrix_work("v_wmma_f32_16x16x16_f16"), 4096);
  EXPECT_DOUBLE_EQ(matrix_work("v_mfma_f32_32x32x8f16"), 32 * 32 * 8);  // K's digits run into the type
  EXPECT_DOUBLE_EQ(matrix_work("v_swmmac_f32_16x16x32_f16"), 16 * 16 * 32);
  EXPECT_DOUBLE_EQ(matrix_work("v_fma_f32"), 0);
  // gfx9/10 and gfx11 spellings of shared-memory loads.
  EXPECT_EQ(shared_load_bits("ds_read_b32"), 32);
  EXPECT_EQ(shared_load_bits("ds_read_b64"), 64);
  EXPECT_EQ(shared_load_bits("ds_read2_b64"), 128);
  EXPECT_EQ(shared_load_bits("ds_load_b128"), 128);
  EXPECT_EQ(shared_load_bits("ds_load_2addr_stride64_b32"), 64);
  EXPECT_EQ(shared_load_bits("ds_read_u16"), 16);
  EXPECT_EQ(shared_load_bits("ds_write_b32"), 0);
  EXPECT_EQ(global_load_bits("buffer_load_dword"), 32);
  EXPECT_EQ(global_load_bits("buffer_load_dwordx4"), 128);
  EXPECT_EQ(global_load_bits("buffer_load_dwordx2"), 64);
  EXPECT_EQ(global_load_bits("buffer_load_ushort"), 16);
  EXPECT_EQ(global_load_bits("buffer_load_u16"), 16);
  EXPECT_EQ(global_load_bits("buffer_load_b96"), 96);
  EXPECT_EQ(global_load_bits("global_load_b128"), 128);
  EXPECT_EQ(global_load_bits("buffer_load_ubyte"), 8);
  EXPECT_EQ(global_load_bits("s_buffer_load_dword"), 0);
  EXPECT_EQ(global_load_bits("s_load_dwordx4"), 0);
}

TEST(IsaMix, NamesTheIsaOfEachDriversDisassembly) {
  EXPECT_EQ(isa_of_representation("Assembly"), Isa::aco);
  EXPECT_EQ(isa_of_representation("NAK assembly"), Isa::nak);
  EXPECT_EQ(isa_of_representation("GEN Assembly"), Isa::intel);
  EXPECT_EQ(isa_of_representation("gen assembly"), Isa::intel);
  EXPECT_FALSE(isa_of_representation("NIR Shader(s)"));
  EXPECT_FALSE(isa_of_representation("ACO IR"));
  EXPECT_FALSE(isa_of_representation("NIR assembly"));
}

// NAK: a K loop whose exit test leads to a break block (a flag set to 2, joining the block that closes
// the loop) and to the epilogue, laid out between the header and the back edge; a staging loop of
// 0x200 / 0x100 = 2 trips nested in it; FMAs, loads of three widths, a spill and its fill.
TEST(IsaMixNak, ReadsBlocksSuccessorsAndOperands) {
  const std::vector<Instruction> code = parse_disassembly(listing("nak_gmm.s"), Isa::nak);
  ASSERT_EQ(code.size(), 46u);  // 9 blocks, 37 instructions
  EXPECT_EQ(code[0].label, 0);
  ASSERT_TRUE(code[0].successors);
  EXPECT_EQ(*code[0].successors, std::vector<int>{1});
  // The break block goes where the closing test sends it: out of the loop, to the epilogue (block 7).
  EXPECT_EQ(*code[line_of_label(code, 2)].successors, std::vector<int>{7});
  EXPECT_EQ(*code[line_of_label(code, 6)].successors, (std::vector<int>{7, 8}));
  const Instruction& exit_test = code[line_of_label(code, 1) + 4];
  EXPECT_EQ(exit_test.mnemonic, "bra");
  EXPECT_EQ(exit_test.target, 3);  // L6
  const Instruction& step = code[line_of_label(code, 5) + 12];
  EXPECT_EQ(step.mnemonic, "iadd3");
  EXPECT_EQ(step.dests, std::vector<std::string>{"r20"});
  EXPECT_EQ(step.sources, (std::vector<std::string>{"r20", "0x10"}));  // rZ dropped
  EXPECT_TRUE(step.traits.add && step.traits.valu);
  const Instruction& test = code[line_of_label(code, 1) + 3];
  EXPECT_TRUE(test.traits.compare);
  EXPECT_EQ(test.dests, std::vector<std::string>{"p0"});
  EXPECT_EQ(test.sources, (std::vector<std::string>{"r20", "c[0x0][0x40]"}));
  const std::vector<Loop> loops = find_loops(code);
  ASSERT_EQ(loops.size(), 2u);
  EXPECT_EQ(loops[0].parent, -1);
  EXPECT_EQ(loops[1].parent, 0);
  EXPECT_TRUE(loops[0].contains(line_of_label(code, 8)));
  EXPECT_FALSE(loops[0].contains(line_of_label(code, 2) + 1));  // the break block
  EXPECT_FALSE(loops[0].contains(line_of_label(code, 7) + 1));  // the epilogue
}

TEST(IsaMixNak, MainLoopCountsItsBlocksAndNestedTrips) {
  const Mix m = main_loop_mix(parse_disassembly(listing("nak_gmm.s"), Isa::nak));
  ASSERT_TRUE(m.found);
  EXPECT_EQ(m.k_per_iteration, 16);
  // Own blocks 1, 3, 5, 6, 8: 4 + 2 + 13 + 3 + 1; the staging loop's 6, twice.
  EXPECT_DOUBLE_EQ(m.instructions, 23 + 2 * 6);
  EXPECT_DOUBLE_EQ(m.fma, 4);
  EXPECT_DOUBLE_EQ(m.fma_work, 3 + 2);  // hfma2: two
  EXPECT_DOUBLE_EQ(m.shared_loads, 3);
  EXPECT_DOUBLE_EQ(m.shared_load_bits.at(128), 2);  // ld.shared b128 and ldsm .x4
  EXPECT_DOUBLE_EQ(m.shared_load_bits.at(64), 1);
  EXPECT_DOUBLE_EQ(m.shared_stores, 2);
  EXPECT_DOUBLE_EQ(m.global_loads, 4);
  EXPECT_DOUBLE_EQ(m.global_load_bits.at(128), 2);
  EXPECT_DOUBLE_EQ(m.global_load_bits.at(32), 2);
  EXPECT_DOUBLE_EQ(m.local_loads, 1);
  EXPECT_DOUBLE_EQ(m.local_stores, 1);
  EXPECT_DOUBLE_EQ(m.barriers, 1);
  EXPECT_DOUBLE_EQ(m.waits, 1);
  EXPECT_DOUBLE_EQ(m.branches, 6 + 2 * 1);  // bclear, bssy, bra, bsync, bra, bra; the staging loop's bra
  EXPECT_DOUBLE_EQ(m.valu, 9 + 2 * 2);
  EXPECT_DOUBLE_EQ(m.salu, 1);  // ur6 = mov 0x0
  EXPECT_EQ(m.nested_loops, 1);
  EXPECT_EQ(m.unknown_trips, 0);
}

TEST(IsaMixNak, MatrixLoopIsTheMainLoop) {
  const Mix m = main_loop_mix(parse_disassembly(listing("nak_matrix.s"), Isa::nak));
  ASSERT_TRUE(m.found);
  EXPECT_EQ(m.k_per_iteration, 32);
  EXPECT_DOUBLE_EQ(m.instructions, 7);
  EXPECT_DOUBLE_EQ(m.matrix, 2);
  EXPECT_DOUBLE_EQ(m.matrix_work, 2 * 16 * 8 * 16);
  EXPECT_DOUBLE_EQ(m.fma, 0);
  EXPECT_DOUBLE_EQ(m.shared_load_bits.at(128), 1);  // ldsm .x4
  EXPECT_DOUBLE_EQ(m.shared_load_bits.at(64), 1);   // ldsm .x2
  EXPECT_DOUBLE_EQ(m.shared_loads / m.ops(), 1);
}

// NAK 26 steps a uniform counter into another register and moves it back at the loop's end: the K step
// is still read (tgmm's loop on Mesa 26.2).
TEST(IsaMixNak, CounterCarriedThroughAMove) {
  const std::string text =
      "block 0 L0 [] -> {\n"
      "      ur7       = mov rZ                                          // delay=1\n"
      "} -> [1]\n"
      "block 1 L1 [0, 2] -> {\n"
      "      p0        = isetp.ge.i32 ur7 ur3                            // delay=13\n"
      "@p0               bra L3                                          // delay=1\n"
      "} -> [2, 3]\n"
      "block 2 L2 [1] -> {\n"
      "      r5        = ffma r6 r7 r5                                   // delay=1\n"
      "      ur11      = iadd3 ur7 0x10 rZ                               // delay=6\n"
      "      ur7       = mov ur11                                        // delay=1\n"
      "                  bra L1                                          // delay=1\n"
      "} -> [1]\n"
      "block 3 L3 [1] -> {\n"
      "                  exit                                            // delay=1\n"
      "} -> []\n";
  const Mix m = main_loop_mix(parse_disassembly(text, Isa::nak));
  ASSERT_TRUE(m.found);
  EXPECT_EQ(m.k_per_iteration, 16);
  EXPECT_DOUBLE_EQ(m.fma, 1);
}

TEST(IsaMixNak, ClassifiesInstructions) {
  auto t = [](const std::string& line) { return traits_of(line, Isa::nak); };
  EXPECT_DOUBLE_EQ(t("r1 = ffma.ftz r2 r3 r1").fma_work, 1);
  EXPECT_DOUBLE_EQ(t("r1 = hfma2 r2 r3 r1").fma_work, 2);
  EXPECT_FALSE(t("r1 = imad r2 c[0x0][0x10] r1").fma);
  EXPECT_DOUBLE_EQ(t("r4..8 = hmma.16816.f32 r40..44 r44..46 r4..8").matrix_work, 2048);
  EXPECT_DOUBLE_EQ(t("r4..8 = hmma.m16n8k8.f32 r40..42 r44 r4..8").matrix_work, 1024);
  EXPECT_DOUBLE_EQ(t("r4..8 = imma.m16n8k32.i8.i8 r40..42 r44 r4..8").matrix_work, 4096);
  EXPECT_EQ(t("r1..3 = ldsm.16.m8n8.x2 [r9]").shared_load_bits, 64);
  EXPECT_EQ(t("r1 = ldsm.16.m8n8.trans.x1 [r9]").shared_load_bits, 32);
  EXPECT_EQ(t("r1 = ld.shared.strong.cta.u16 [r9]").shared_load_bits, 16);
  EXPECT_EQ(t("r1..3 = ld.global.a64.strong.gpu.b64 [r2..4]").global_load_bits, 64);
  EXPECT_EQ(t("r0..4 = tld.lz.b r2 r3").global_load_bits, 128);  // a texel fetch of four components
  EXPECT_TRUE(t("r1 = ldc.b32 c[0x3][r2]").scalar_load);
  EXPECT_TRUE(t("r1 = ld.local.b32 [r1+0x10]").local_load);
  EXPECT_TRUE(t("st.local.b64 [r1+0x10] r2..4").local_store);
  EXPECT_FALSE(t("st.global.a64.strong.sys.b128 [r2..4] r4..8").global_load_bits);
  EXPECT_TRUE(t("bar.sync").barrier);
  EXPECT_TRUE(t("@!p0 bra L1").branch);
  EXPECT_TRUE(t("bsync b0 pT").branch);
  EXPECT_TRUE(t("nop").wait);
  EXPECT_TRUE(t("ur4 = iadd3 ur4 0x1 urZ").salu);
  EXPECT_TRUE(t("p0 = isetp.lt.u32 r1 0x200").compare);
  EXPECT_FALSE(t("r3 = iadd3.x rZ c[0x1][0x24] rZ p0 pF").add);  // the carry half
  EXPECT_FALSE(t("r3 = iadd3 r3 r4 0x1").add);                   // not a constant step
}

// Intel (DG2, SIMD8): the same shapes in structured control flow; a spill fill and a spill through the
// scratch surface, a uniform (transposed) load, and a half-float mad over two SIMD8 halves.
TEST(IsaMixIntel, ReadsLabelsMessagesAndOperands) {
  const std::vector<Instruction> code = parse_disassembly(listing("intel_gmm.s"), Isa::intel);
  ASSERT_EQ(code.size(), 36u);  // 4 labels, 32 instructions (a send's message is its own line's)
  const size_t head = line_of_label(code, 158);
  const Instruction& test = code[head + 1];
  EXPECT_EQ(test.mnemonic, "cmp.ge.f0.0");
  EXPECT_TRUE(test.traits.compare);
  EXPECT_TRUE(test.dests.empty());  // null
  EXPECT_EQ(test.sources, (std::vector<std::string>{"g1", "g3"}));
  EXPECT_EQ(code[head + 2].target, 156);  // the break
  const Instruction& step = code[line_of_label(code, 156) - 1];
  EXPECT_EQ(step.mnemonic, "add");
  EXPECT_EQ(step.dests, std::vector<std::string>{"g1"});
  EXPECT_EQ(step.sources, (std::vector<std::string>{"g1", "16"}));
  EXPECT_TRUE(step.traits.add);
  EXPECT_EQ(code[line_of_label(code, 156) + 1].target, 158);  // the while
  const std::vector<Loop> loops = find_loops(code);
  ASSERT_EQ(loops.size(), 2u);
  EXPECT_EQ(loops[0].begin, head);
  EXPECT_EQ(loops[1].parent, 0);
}

TEST(IsaMixIntel, MainLoopCountsNestedLoopsWithTheirTrips) {
  const Mix m = main_loop_mix(parse_disassembly(listing("intel_gmm.s"), Isa::intel));
  ASSERT_TRUE(m.found);
  EXPECT_EQ(m.k_per_iteration, 16);
  EXPECT_DOUBLE_EQ(m.instructions, 21 + 2 * 8);
  EXPECT_DOUBLE_EQ(m.fma, 4);           // the integer mad is not one
  EXPECT_DOUBLE_EQ(m.fma_work, 3 + 2);  // mad(16) of half floats in a SIMD8 thread: two per lane
  EXPECT_DOUBLE_EQ(m.shared_load_bits.at(128), 1);
  EXPECT_DOUBLE_EQ(m.shared_load_bits.at(64), 1);
  EXPECT_DOUBLE_EQ(m.shared_stores, 2);
  EXPECT_DOUBLE_EQ(m.global_load_bits.at(128), 2);
  EXPECT_DOUBLE_EQ(m.global_load_bits.at(32), 2);
  EXPECT_DOUBLE_EQ(m.global_bytes(), 2 * 16 + 2 * 4);
  EXPECT_DOUBLE_EQ(m.scalar_loads, 1);
  EXPECT_DOUBLE_EQ(m.local_loads, 1);
  EXPECT_DOUBLE_EQ(m.local_stores, 1);
  EXPECT_DOUBLE_EQ(m.barriers, 1);
  EXPECT_DOUBLE_EQ(m.waits, 3 + 2 * 1);  // sync bar and two sync nops; the staging loop's sync nop
  EXPECT_DOUBLE_EQ(m.branches, 2 + 2 * 2);
  EXPECT_DOUBLE_EQ(m.valu, 8 + 2 * 2);
  EXPECT_DOUBLE_EQ(m.salu, 2);  // mov(1) and and(1) with every channel enabled
  EXPECT_EQ(m.nested_loops, 1);
  EXPECT_EQ(m.unknown_trips, 0);
}

// ANV's DG2 build of gmm_matrix_khr (f16, SIMD8), trimmed: four dpas.8x8 per K step of 16.
TEST(IsaMixIntel, MatrixLoopIsTheMainLoop) {
  const Mix m = main_loop_mix(parse_disassembly(listing("intel_matrix.s"), Isa::intel));
  ASSERT_TRUE(m.found);
  EXPECT_EQ(m.k_per_iteration, 16);
  EXPECT_DOUBLE_EQ(m.instructions, 33);
  EXPECT_DOUBLE_EQ(m.matrix, 4);
  EXPECT_DOUBLE_EQ(m.matrix_work, 4 * 8 * 8 * 16);  // dpas.8x8(8) of half floats: M 8, N 8, K 16
  EXPECT_DOUBLE_EQ(m.fma, 0);
  EXPECT_DOUBLE_EQ(m.valu, 8);  // the dpas among them
  EXPECT_DOUBLE_EQ(m.waits, 13);  // sync nop/allwr/bar and the two fences
  EXPECT_DOUBLE_EQ(m.branches, 4);
  EXPECT_DOUBLE_EQ(m.barriers, 1);
  EXPECT_DOUBLE_EQ(m.shared_load_bits.at(128), 4);
  EXPECT_DOUBLE_EQ(m.shared_load_bits.at(32), 1);
  EXPECT_DOUBLE_EQ(m.global_load_bits.at(64), 2);
  EXPECT_DOUBLE_EQ(m.shared_loads / m.ops(), 5.0 / 4);
}

TEST(IsaMixIntel, ClassifiesInstructions) {
  auto t = [](const std::string& text) { return traits_of(text, Isa::intel); };
  EXPECT_DOUBLE_EQ(t("dpas.8x8(8) g40<1>D g40<1,1,0>D g10<1,1,0>B g20<1,1,0>B { align1 1Q };").matrix_work,
                   8 * 8 * 8 * 4);
  EXPECT_DOUBLE_EQ(t("dpas.8x4(16) g40<1>F g40<1,1,0>F g10<1,1,0>BF g20<1,1,0>BF { align1 1H };").matrix_work,
                   16 * 4 * 8 * 2);
  EXPECT_TRUE(t("(+f0.0) sel(8) g125<1>UD g122<8,8,1>UD g2<0,1,0>UD { align1 1Q };").valu);
  EXPECT_TRUE(t("math inv(8) g5<1>F g4<8,8,1>F null<8,8,1>F { align1 1Q };").valu);
  EXPECT_TRUE(t("endif(8) JIP:  LABEL2 { align1 1Q };").branch);
  EXPECT_FALSE(t("add(8) g5<1>F g5<8,8,1>F 0x3f800000F /* 1F */ { align1 1Q };").add);
  const char send16[] =
      "send(8) g12UD g40UD nullUD 0x04205500 0x00000000\n"
      "    ugm MsgDesc: ( load, a64, d16, V1, L1STATE_L3MOCS dst_len = 1, src0_len = 2, src1_len = 0 flat ) { align1 1Q };\n";
  EXPECT_EQ(t(send16).global_load_bits, 16);
  const char fence[] =
      "send(1) g5UD g0UD nullUD 0x0210011f 0x00000000\n"
      "    slm MsgDesc: ( fence, a32, threadgroup, none, normal_routing  flat ) { align1 WE_all 1N $1 };\n";
  EXPECT_TRUE(t(fence).wait);
  const char atomic[] =
      "send(8) g5UD g6UD g7UD 0x0210011f 0x00000000\n"
      "    slm MsgDesc: ( atomic_iadd, a32, d32, V1, L1STATE_L3MOCS dst_len = 1, src0_len = 1, src1_len = 1 flat ) { align1 1Q };\n";
  const Traits a = t(atomic);
  EXPECT_FALSE(a.shared_load_bits || a.shared_store || a.valu);
}

}  // namespace
