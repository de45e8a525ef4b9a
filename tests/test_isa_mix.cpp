// The gpu-report's reading of ACO disassembly (gpu_report/isa_mix.*) on fixed listings shaped like
// RADV's: a K loop with a staging loop nested in it, and the instruction classes.
#include <gtest/gtest.h>

#include "isa_mix.hpp"

namespace {

using namespace gpu_report;

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

}  // namespace
