// The matrix builds' stage (shaders/stage_layout.h) replayed lane by lane: for every stage the matrix
// schedule can lay out (each block, step and matrix shape make_matrix_shape gives, each source layout),
// the addresses one subgroup's lanes store and the matrix units load, counted against shared memory's
// banks. The model is NVIDIA's: 32 banks of 4 bytes, one 32-lane warp per instruction; two lanes on one
// word do not conflict; a matrix unit's load (LDSM) reads 8 runs of 16 bytes per phase, one run per 8
// contiguous f16 values.
//
// What holds, and why:
//  - loads: conflict-free, each phase's 8 runs on 8 different groups of 4 banks (the 16-byte pad);
//  - stores: at most 2-way, the least for 16-bit stores (a warp's 32 lanes each write one of 4 adjacent
//    values), except 3-way for a source contiguous along the step (gmm's lhs and rhs [n, k], tgmm's lhs
//    [k, m]) where the step is 32: a warp then writes 4 lines 80 bytes apart, and no stride that is a
//    multiple of 16 bytes and keeps the loads conflict-free puts 4 such runs 2-way. Sources contiguous
//    along the lines (gmm's rhs [k, n], tgmm's lhs [m, k] and rhs) are stored a 4 x 4 block at a time,
//    transposed in registers (shaders/stage_lines.glsl), wherever the invocations divide the chunks in
//    fours: 2-way, except 4-way where the step is 16 (a warp covers 8 groups of 4 lines, and 4 lines of
//    48 bytes put every group's start on bank 0 or 16). Elsewhere (small blocks or short steps, where an
//    invocation's chunks are not a multiple of 4) one by one, each lane's 4 values on 4 lines: up to
//    16-way.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "interface.hpp"
#include "tiling.hpp"

namespace vkgmm {
namespace {

using abi::vkgmm_kmajor_k;
using abi::vkgmm_kmajor_line;
using abi::vkgmm_lines_k;
using abi::vkgmm_lines_line;
using abi::vkgmm_stage_place;
using abi::vkgmm_stage_stride;

constexpr uint32_t kBanks = 32, kWarp = 32;

// The most distinct 4-byte words any bank serves for one access, given each lane's byte addresses.
uint32_t conflict_degree(const std::vector<uint32_t>& bytes) {
  std::map<uint32_t, std::set<uint32_t>> words_of_bank;
  for (uint32_t b : bytes) words_of_bank[(b / 4) % kBanks].insert(b / 4);
  uint32_t most = 0;
  for (const auto& [bank, words] : words_of_bank) most = std::max<uint32_t>(most, uint32_t(words.size()));
  return most;
}

// One operand's stage as a build lays it out.
struct Stage {
  bool along_lines;  // its source contiguous along the lines (chunks of 4 lines), else along the step
  uint32_t lines;    // A's rows or B's product columns
  uint32_t depth;    // the step
  uint32_t invocations;
  std::string what;
};

// Whether the matrix builds take the stage's chunks in quads (shaders/stage_lines.glsl): a source along the
// lines whose chunks the invocations divide in fours.
bool in_quads(const Stage& st) { return st.along_lines && VKGMM_LINES_IN_QUADS(st.lines * st.depth / 4, st.invocations); }

// The worst store of the first warp: invocation lid stages chunks lid + s * NT (the ops' staging), 4 values
// each, one 16-bit store per value: along the step, the chunk's 4 step rows of its line; along the lines,
// in quads (`quads` and in_quads) the 4 x 4 block of chunks s .. s + 3 a line at a time, else the chunk's 4
// lines of its step row.
uint32_t worst_store(const Stage& st, bool quads = true) {
  const uint32_t chunks = st.lines * st.depth / 4, nt = st.invocations;
  const bool block = quads && in_quads(st);
  uint32_t worst = 0;
  for (uint32_t s = 0; s * nt < chunks; ++s) {
    if (block && s % 4 != 0) continue;
    for (uint32_t store = 0; store < (block ? 16u : 4u); ++store) {
      std::vector<uint32_t> bytes;
      for (uint32_t lid = 0; lid < std::min(kWarp, nt); ++lid) {
        const uint32_t e = lid + s * nt;
        if (e >= chunks) continue;
        uint32_t place;
        if (!st.along_lines) {
          place = vkgmm_stage_place(vkgmm_kmajor_line(true, e, st.lines, st.depth),
                                    vkgmm_kmajor_k(true, e, st.lines, st.depth) + store, st.depth);
        } else {
          const uint32_t line = vkgmm_lines_line(block, lid, s, nt, st.lines, st.depth);
          const uint32_t k = vkgmm_lines_k(block, lid, s, nt, st.lines, st.depth);
          place = block ? vkgmm_stage_place(line + store / 4, k + store % 4, st.depth)
                        : vkgmm_stage_place(line + store, k, st.depth);
        }
        bytes.push_back(place * 2);
      }
      if (!bytes.empty()) worst = std::max(worst, conflict_degree(bytes));
    }
  }
  return worst;
}

// The worst phase of the matrix units' loads: every 8 x 8 block of the stage (its first line and step row
// multiples of 8), as 8 runs of 8 contiguous values, the step rows of 8 lines.
uint32_t worst_load(const Stage& st) {
  uint32_t worst = 0;
  EXPECT_EQ(vkgmm_stage_stride(st.depth) % 8, 0u) << st.what << ": lines must start 16-byte aligned";
  for (uint32_t line = 0; line < st.lines; line += 8)
    for (uint32_t k = 0; k < st.depth; k += 8) {
      std::vector<uint32_t> bytes;
      for (uint32_t r = 0; r < 8; ++r)
        for (uint32_t w = 0; w < 4; ++w) bytes.push_back(vkgmm_stage_place(line + r, k, st.depth) * 2 + w * 4);
      worst = std::max(worst, conflict_degree(bytes));
    }
  return worst;
}

struct MatrixDevice {
  const char* name;
  uint32_t m, n, k, lanes, shared;
};

// The matrix units vkgmm plans for (tests/test_kernel_choice.cpp's descriptions).
const MatrixDevice kDevices[] = {
    {"H100", 16, 16, 16, 32, 49152},    {"NVK GA102", 16, 8, 16, 32, 49152}, {"RADV NAVI31", 16, 16, 16, 32, 65536},
    {"ANV DG2", 8, 8, 16, 8, 65536},    {"ANV BMG", 8, 16, 16, 16, 131072},
};

DeviceInfo matrix_info(const MatrixDevice& d) {
  DeviceInfo info;
  info.type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  info.subgroup_size = 32;
  info.matrix_extension = "VK_KHR_cooperative_matrix";
  info.matrix_m = d.m;
  info.matrix_n = d.n;
  info.matrix_k = d.k;
  info.matrix_subgroup_size = d.lanes;
  info.max_shared_memory = d.shared;
  info.max_workgroup_invocations = 1024;
  return info;
}

// Every stage the matrix schedule lays out for blocks and steps the tiling tables can ask (a superset of
// them: rows 16-128, steps 16-64, columns 64-128), gmm's (rhs either layout, f16 or a block format, one or
// two halves) and tgmm's (lhs either layout).
std::vector<Stage> stages() {
  std::vector<Stage> out;
  auto add = [&](const KernelShape& s, bool a_lines, bool b_lines, uint32_t b_count, const std::string& what) {
    out.push_back({a_lines, s.rows, s.step, s.invocations(), what + " A"});
    out.push_back({b_lines, b_count, s.step, s.invocations(), what + " B"});
  };
  for (const MatrixDevice& d : kDevices) {
    const DeviceInfo info = matrix_info(d);
    for (int64_t rows : {16, 32, 64, 128})
      for (int64_t step : {16, 32, 64})
        for (int64_t cols : {64, 128}) {
          const std::string tile = std::string(d.name) + " " + std::to_string(rows) + "x" + std::to_string(step) + "x" +
                                   std::to_string(cols);
          for (uint32_t halves : {1u, 2u})
            for (bool blocks : {false, true}) {
              const KernelShape s = make_matrix_shape(rows, step, cols, 4096, 4096, 4096, info, "gmm", halves, blocks);
              EXPECT_EQ(s.shared_a, s.rows * vkgmm_stage_stride(s.step)) << tile;
              // A second buffer (STAGES 2) begins a whole number of 16-byte groups after the first, each
              // operand's: a uniform shift, which keeps each access's conflicts and the 16-byte alignment of
              // the matrix loads, so the replay below holds for both buffers.
              EXPECT_EQ(s.shared_a % 8u, 0u) << tile;
              EXPECT_EQ(s.shared_b % 8u, 0u) << tile;
              for (bool rhs_kn : {true, false})
                add(s, false, rhs_kn, s.cols * halves,
                    tile + " gmm" + (rhs_kn ? " rhs [k, n]" : " rhs [n, k]") + (blocks ? " blocks" : "") +
                        (halves == 2 ? " gated" : ""));
            }
          // tgmm: rows are k, the step the group's rows.
          const KernelShape s = make_matrix_shape(rows, step, cols, 4096, 4096, 4096, info, "tgmm", 1, false);
          for (bool lhs_mk : {true, false})
            add(s, lhs_mk, true, s.cols, tile + " tgmm" + (lhs_mk ? " lhs [m, k]" : " lhs [k, m]"));
        }
  }
  return out;
}

TEST(StageBanks, MatrixUnitsLoadWithoutConflicts) {
  for (const Stage& st : stages()) EXPECT_EQ(worst_load(st), 1u) << st.what;
}

// The most a store may conflict (see the top of the file).
uint32_t store_bound(const Stage& st) {
  if (!st.along_lines) return st.depth == 32 ? 3 : 2;
  if (!in_quads(st)) return 16;
  return st.depth == 16 ? 4 : 2;
}

TEST(StageBanks, StoresAtMostTwoWayOrAsStated) {
  size_t along = 0, quads = 0, one_by_one = 0;
  for (const Stage& st : stages()) {
    EXPECT_LE(worst_store(st), store_bound(st)) << st.what;
    ++(!st.along_lines ? along : in_quads(st) ? quads : one_by_one);
  }
  EXPECT_GT(along, 0u);
  EXPECT_GT(quads, 0u);
  EXPECT_GT(one_by_one, 0u);
}

// The orders the FMA builds use, which the replay must tell apart: chunks of a source along the lines one
// by one, each lane's 4 values on 4 lines (4- to 16-way from 32 lines up); K-major chunks across the lines, each lane's 8
// bytes from another line (a quarter of a 32-byte sector), 4-way.
TEST(StageBanks, ReplaySeesTheConflictsOfTheFmaBuildsOrders) {
  for (const Stage& st : stages())
    if (st.along_lines && st.lines >= 32) {
      const uint32_t worst = worst_store(st, false);
      EXPECT_GE(worst, 4u) << st.what;
      EXPECT_LE(worst, 16u) << st.what;
    }
  const uint32_t lines = 128, depth = 32;
  std::vector<uint32_t> bytes;
  for (uint32_t lid = 0; lid < kWarp; ++lid)
    bytes.push_back(2 * vkgmm_stage_place(vkgmm_kmajor_line(false, lid, lines, depth),
                                          vkgmm_kmajor_k(false, lid, lines, depth), depth));
  EXPECT_EQ(conflict_degree(bytes), 4u);
}

}  // namespace
}  // namespace vkgmm
