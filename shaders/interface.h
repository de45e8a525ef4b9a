// The host <-> shader interface of every vkgmm pipeline, in one place: descriptor bindings,
// specialization constant ids and push-constant blocks. Read by the GLSL (through
// GL_GOOGLE_include_directive) and by the C++ host (host/interface.hpp), so neither side can drift:
// the shaders declare their constants with these ids and their push blocks from these field lists, and
// the host fills the same ids and the same structs. tests/interface/test_interface.cpp reflects the built SPIR-V
// and checks it against the host's view.
//
// Only the preprocessor is shared: plain #defines and X-macro field lists, valid in both languages.
// A push block is declared from its list with VKGMM_PUSH_FIELD, which both sides define alike.
#ifndef VKGMM_INTERFACE_H
#define VKGMM_INTERFACE_H

#include "../include/vkgmm/vocabulary.h"

#define VKGMM_PUSH_FIELD(type, name) type name;

// ----- descriptor set 0 (pushed with vkCmdPushDescriptorSetKHR) -------------------------------------
#define VKGMM_BINDING_LHS 0
#define VKGMM_BINDING_RHS 1
#define VKGMM_BINDING_OUT 2
#define VKGMM_BINDING_EXISTING 3
#define VKGMM_BINDING_META 4   // the plan's metadata (workspace), int32 words
#define VKGMM_BINDING_BIAS 5   // gmm's epilogue bias, f32 [G_local, n]; tgmm's chunk slots (SPLIT); else any valid view
#define VKGMM_NUM_BINDINGS 6
// The plain layout adds uniform texel views of lhs and rhs (only VKGMM_TEXEL modules declare them).
#define VKGMM_BINDING_LHS_TEXEL 6
#define VKGMM_BINDING_RHS_TEXEL 7
#define VKGMM_NUM_PLAIN_BINDINGS 8
// The split layout (VKGMM_SPLIT modules) binds each of lhs, rhs, out and existing_out as up to
// VKGMM_MAX_PARTS parts: part p > 0 of operand o (0..3, in binding order) is at binding
// VKGMM_NUM_BINDINGS + 3 * o + p - 1.
#define VKGMM_MAX_PARTS 4
#define VKGMM_NUM_SPLIT_BINDINGS 18
// The helper modules bind the same plain layout, each binding named for what that module holds there.
// The metadata build (shaders/metadata.comp): the app's group sizes, or when routed the ids (int32), the
// routing weights (f32), the workspace it writes, the status word.
#define VKGMM_BINDING_META_SIZES VKGMM_BINDING_LHS
#define VKGMM_BINDING_META_IDS VKGMM_BINDING_LHS
#define VKGMM_BINDING_META_WEIGHTS VKGMM_BINDING_RHS
#define VKGMM_BINDING_META_WORKSPACE VKGMM_BINDING_OUT
#define VKGMM_BINDING_META_STATUS VKGMM_BINDING_EXISTING
// A routing given by another plan's build (ROUTE_GIVEN): that plan's workspace, its counts and row map.
#define VKGMM_BINDING_META_GIVEN VKGMM_BINDING_META
// The ordered combine (shaders/combine.comp): the per-slot results (in the workspace), out, existing_out.
#define VKGMM_BINDING_COMBINE_PARTIAL VKGMM_BINDING_LHS
#define VKGMM_BINDING_COMBINE_OUT VKGMM_BINDING_OUT
#define VKGMM_BINDING_COMBINE_EXISTING VKGMM_BINDING_EXISTING
// tgmm's chunk partial sums (SPLIT: in the workspace; tgmm has no bias).
#define VKGMM_BINDING_TGMM_PARTIAL VKGMM_BINDING_BIAS
// Top-k routing (shaders/topk.comp): the logits it reads, the ids and weights it writes.
#define VKGMM_BINDING_TOPK_LOGITS VKGMM_BINDING_LHS
#define VKGMM_BINDING_TOPK_WEIGHTS VKGMM_BINDING_RHS
#define VKGMM_BINDING_TOPK_IDS VKGMM_BINDING_OUT
// Top-k routing's gradient (shaders/topk_grad.comp): the forward's logits, ids and weights, d_weights,
// and the d_logits it writes (and reads with ACCUMULATE).
#define VKGMM_BINDING_TOPK_GRAD_LOGITS VKGMM_BINDING_LHS
#define VKGMM_BINDING_TOPK_GRAD_WEIGHTS VKGMM_BINDING_RHS
#define VKGMM_BINDING_TOPK_GRAD_D_LOGITS VKGMM_BINDING_OUT
#define VKGMM_BINDING_TOPK_GRAD_D_WEIGHTS VKGMM_BINDING_EXISTING
#define VKGMM_BINDING_TOPK_GRAD_IDS VKGMM_BINDING_META
// The routed backward's epilogue gradient (shaders/routed_grad.comp): the forward's lhs and routing
// weights, d_out, the routing build's words (row map and group offsets), the gradient workspace it writes
// (per-slot and expert-ordered d_h, the gathered lhs rows, ones), and d_weights.
#define VKGMM_BINDING_GRAD_LHS VKGMM_BINDING_LHS
#define VKGMM_BINDING_GRAD_D_OUT VKGMM_BINDING_RHS
#define VKGMM_BINDING_GRAD_WORK VKGMM_BINDING_OUT
#define VKGMM_BINDING_GRAD_WEIGHTS VKGMM_BINDING_EXISTING
#define VKGMM_BINDING_GRAD_ROUTE VKGMM_BINDING_META
#define VKGMM_BINDING_GRAD_D_WEIGHTS VKGMM_BINDING_BIAS
// Past the plain six (routed_grad binds the split layout): the pre-activation, saved by the forward or
// recomputed, and the gradient area's three large regions, each its own binding (so that none but each
// region must fit one): d_h per slot, d_h in expert order, the gathered lhs rows.
#define VKGMM_BINDING_GRAD_PRE VKGMM_NUM_BINDINGS
#define VKGMM_BINDING_GRAD_D_H (VKGMM_NUM_BINDINGS + 1)
#define VKGMM_BINDING_GRAD_SORTED (VKGMM_NUM_BINDINGS + 2)
#define VKGMM_BINDING_GRAD_GATHERED (VKGMM_NUM_BINDINGS + 3)

// gmm's routing bindings, past both layouts' bindings, in each: the gmm module declares them in every
// build, so every gmm dispatch pushes a valid view at each. Reading the app's routing in the kernel
// (VKGMM_ID_GMM_ROUTE_IN_KERNEL, VKGMM_ID_GMM_SIZES_IN_KERNEL): the router weights (f32 [slots]) and what
// the kernel reads instead of a build's metadata (int32: the ids, or the group sizes), the app's own
// buffers at bindings the module does not declare writable, and the status word. Routed with a build: the workspace the kernel writes (the fused combine's per-slot results and
// tile counters, the saved pre-activations), its own binding so that the metadata's stays read-only.
#define VKGMM_BINDING_ROUTE_WEIGHTS VKGMM_NUM_SPLIT_BINDINGS
#define VKGMM_BINDING_ROUTE_STATUS (VKGMM_NUM_SPLIT_BINDINGS + 1)
#define VKGMM_BINDING_ROUTE_READS (VKGMM_NUM_SPLIT_BINDINGS + 2)
#define VKGMM_BINDING_ROUTE_WORKSPACE (VKGMM_NUM_SPLIT_BINDINGS + 3)
#define VKGMM_NUM_ROUTE_BINDINGS 4

// ----- specialization constants ------------------------------------------------------------------------
// Every kernel's shape (host/tiling.hpp, KernelShape): an output block [BLOCK_ROWS, BLOCK_COLS] reduced
// STEP at a time by TX x TY invocations, each holding ROWS_PER_INV x COLS_PER_INV accumulators.
// gmm's block is [tm, tn] with K step tk; tgmm's block is [tk, tn] and its step tm rows of the group.
#define VKGMM_ID_INVOCATIONS 0   // local_size_x = TX * TY
#define VKGMM_ID_BLOCK_ROWS 1
#define VKGMM_ID_STEP 2
#define VKGMM_ID_BLOCK_COLS 3
#define VKGMM_ID_TX 4
#define VKGMM_ID_TY 5
#define VKGMM_ID_ROWS_PER_INV 6
#define VKGMM_ID_COLS_PER_INV 7
#define VKGMM_ID_LHS_TYPE 8      // element types: VKGMM_DT_*
#define VKGMM_ID_RHS_TYPE 9
#define VKGMM_ID_OUT_TYPE 10
#define VKGMM_ID_USE_SHARED 11   // the shared-memory schedule, else the direct one
#define VKGMM_ID_HAS_EXISTING 12
#define VKGMM_ID_SHARED_A 13     // shared array lengths (1 when unused)
#define VKGMM_ID_SHARED_B 14
#define VKGMM_ID_VEC4 15         // the direct schedule's 4-element loads (see each shader)
// The persistent grid (ContextOptions::grid): a fixed number of workgroups, each looping over the op's
// work items (gmm: (visit, n tile); tgmm: (group, k block, n block)) from its index, stepping by their
// count; else one workgroup per work item.
#define VKGMM_ID_PERSISTENT 30
// The shared schedules' stage buffers (stage.glsl), 1 or 2: with 2 each next step is stored into the other
// buffer while the current one computes, one barrier per step where one buffer takes two. The FMA builds: 2
// where the device class takes them (not NVIDIA's, not CPU devices'), both fit the device's shared memory
// and each invocation holds few chunks in flight (host/tiling.cpp, make_shared_shape). The matrix builds: 2
// only where the options ask and both fit (host/tiling_matrix.cpp, make_matrix_shape). The direct schedule
// keeps 1.
#define VKGMM_ID_STAGES 33
// The kernels whose subgroups share memory number them from the last (shaders/invocation.glsl): a test
// switch ($VKGMM_REVERSE_SUBGROUPS), which the pipeline cache sets where a workgroup is whole subgroups.
#define VKGMM_ID_REVERSE_SUBGROUPS 36
// Per op, from 16 on.
#define VKGMM_ID_GMM_TRANSPOSE_RHS 16
#define VKGMM_ID_GMM_ROUTED 17     // rows are slots routed by expert ids: gather lhs, scatter out (map_off)
#define VKGMM_ID_GMM_WEIGHTED 18   // each row's value times its routing weight (weight_off)
#define VKGMM_ID_GMM_BIAS 19       // + bias[g_local, column] before the activation
// The activation (VKGMM_ACT_*, vkgmm::Activation's values); the gated ones read product columns
// [gate | up]: out_n = n / 2.
#define VKGMM_ID_GMM_ACTIVATION 20
// The shaders' constants VKGMM_ACT_NONE, _SWIGLU, ... from the one list (include/vkgmm/vocabulary.h);
// VULKAN: glslang's, for Vulkan GLSL. They are constants, not macros: an #if cannot test them.
#ifdef VULKAN
#define VKGMM_ACT_CONSTANT_(name, NAME, value, gated) const uint VKGMM_ACT_##NAME = value;
VKGMM_ACTIVATIONS(VKGMM_ACT_CONSTANT_)
#undef VKGMM_ACT_CONSTANT_
#endif
// With WEIGHTED (routed, combined): the kernel itself sums the slots (FUSED_COMBINE, below), no combine dispatch.
#define VKGMM_ID_GMM_FUSED_COMBINE 21
// Rows stored 4 adjacent columns at a time (one vector store): the plan's where out_n is a multiple of
// 4 on the 4-column schedules, off (scalar stores) for a record() whose out offset is not a multiple of
// 4 elements. A constant, not a test of the pushed offset: a CPU driver runs both sides of a branch.
#define VKGMM_ID_GMM_VEC4_OUT 22
// The direct schedule's K slices: the workgroup's invocations are K_SLICES sets of TX x TY, each set
// reducing every K_SLICES-th iteration of its K walk (STEPS_IN_FLIGHT steps) into its own accumulators,
// summed into the first set's in shared memory (SHARED_A floats) before the store. 1 on CPU devices and on
// the shared schedule; on GPUs it fills the workgroup where a visit's few rows (decode) leave its tile a
// few dozen invocations.
#define VKGMM_ID_GMM_K_SLICES 23
// Routed: each slot's pre-activation (the product + bias, before the activation and the weight) also
// goes to the workspace as f32 [slots, n] at pre_off (VKGMM_BINDING_ROUTE_WORKSPACE): the backward's input.
#define VKGMM_ID_GMM_SAVE_PRE 24
// The direct schedule's steps of its K walk per iteration (an element type's quads, a block format's walk
// steps): each slice loads an iteration's steps, all in flight, before their FMAs. 1, except on GPUs'
// sliced decode, where it brings each invocation's weights per iteration to 128 bytes within the device
// class's registers, k a multiple of the iteration (host/tiling.cpp, make_kernel_shape).
#define VKGMM_ID_GMM_STEPS_IN_FLIGHT 32
// Routed and combined, a call of few slots reads the ids in the kernel where the options ask
// (host/gmm_plan.cpp) instead of a routing build's row map: no metadata dispatch, no barrier, no workspace. The grid is (n tiles) x tokens;
// each workgroup takes its token's top_k slots in slot order, each a visit of one row (the slot's, row 0
// of the tile) of its expert when the id is a local one (ids_off at VKGMM_BINDING_ROUTE_READS, window_offset,
// route_experts, num_experts as the routing build reads them), and sums their weighted results
// (route_weights_off at VKGMM_BINDING_ROUTE_WEIGHTS) in registers as the combine does (combine.glsl: from
// 0 in slot order, a slot of no local expert adding nothing, then existing_out), into out: the bits of
// the routing build's path with the same tiles. Workgroup (0, 0, 0) writes the status word (status_off at
// VKGMM_BINDING_ROUTE_STATUS; VKGMM_NO_STATUS: none): VKGMM_STATUS_BAD_ID or 0, from every slot's id.
#define VKGMM_ID_GMM_ROUTE_IN_KERNEL 34
// Group sizes on the device, a call of few rows reads them in the kernel (host/gmm_plan.cpp) instead of
// the metadata build's offsets and visits: no build, no barrier, no workspace. The grid is (n tiles) x
// (num_local + 2) (num_local in route_experts): workgroup y < num_local takes local group y's rows (global
// group group_offset + y), TM at a time from its first; the last two fill the rows below the active
// groups and above them (fill_rows at a time). Each takes its rows from the sizes (int32 [num_groups], from
// global group 0, at ids_off of VKGMM_BINDING_ROUTE_READS) by the
// build's rule (group_sizes.glsl), so the visits, and the bits, are the build's with the same tiles.
// Workgroup (0, 0, 0) writes the status word (status_off at VKGMM_BINDING_ROUTE_STATUS; VKGMM_NO_STATUS:
// none) from every size: VKGMM_STATUS_NEGATIVE_SIZE, VKGMM_STATUS_SUM_ABOVE_M, as the build does.
#define VKGMM_ID_GMM_SIZES_IN_KERNEL 35
#define VKGMM_NO_STATUS 0xFFFFFFFFu
#define VKGMM_ID_TGMM_LHS_MK 16
#define VKGMM_ID_TGMM_OUT_NK 17
#define VKGMM_ID_TGMM_VEC4_LHS 18
#define VKGMM_ID_TGMM_VEC4_OUT 19    // the block stored 4 adjacent columns at a time (as gmm's VEC4_OUT)
#define VKGMM_ID_TGMM_SPLIT 20       // work items from the metadata: a group's rows in chunks (VKGMM_TGMM_ITEM_WORDS)
// Operands bound in parts (VKGMM_SPLIT): words per part = 2^PART_SHIFT.
#define VKGMM_ID_PART_SHIFT 31
// The ops' matrix-unit builds (VKGMM_MATRIX, shaders/matrix_tile.glsl): the cooperative matrices' shape,
// M x N x K of f16 products accumulated in f32 (one the device lists), and the workgroup's subgroups as
// SG_M x SG_N over the output block.
#define VKGMM_ID_MATRIX_M 25
#define VKGMM_ID_MATRIX_N 26
#define VKGMM_ID_MATRIX_K 27
#define VKGMM_ID_MATRIX_SG_M 28
#define VKGMM_ID_MATRIX_SG_N 29
// The matrix builds' stage holds each row of A and each column of B contiguous along the step (the
// reduction), the layout the matrix units load from, at a stride of the step plus this many f16 values:
// 16 bytes, so that rows start 16-byte aligned where the step is a multiple of 8 (matrices of K >= 8) and
// neighbouring rows start in other banks.
#define VKGMM_MATRIX_STAGE_PAD 8

// Element types and GGUF's block formats (vkgmm::DType's values): the shaders' constants VKGMM_DT_F32,
// ..., VKGMM_DT_MXFP4 from the one list (include/vkgmm/vocabulary.h, with the blocks' sizes); constants,
// not macros, as VKGMM_ACT_*.
#ifdef VULKAN
#define VKGMM_DT_CONSTANT_(name, NAME, value, values, bytes, ggml) const uint VKGMM_DT_##NAME = value;
VKGMM_DTYPES(VKGMM_DT_CONSTANT_)
#undef VKGMM_DT_CONSTANT_
#endif
// What the kernels need of each block format beyond its sizes, its decoder's facts, for the host
// (host/tiling_k_walk.cpp: gmm's walk step) and the shaders (shaders/quant.glsl): X(NAME as in VKGMM_DTYPES,
//   step       values per step of the kernel's block walk,
//   head       bytes before a whole block's quants (its scales; q5's high bits); 0: a super-block,
//   run_quads  quads (4 values) per run of one scale,
//   run_words  words of quant bytes per step (quad q decodes from word q % run_words),
//   mins       1 where each run has a min taken off its values,
//   high       1 where a step reads a second run of high bits, 8 words (q6_K's and q5_K's qh, q3_K's
//              hmask),
//   scales     the decoder of a step's scales (VKGMM_QS_*): in its whole block's head; in a
//              super-block's lead, read once per super-block (q4_K's packed 6-bit scales and mins, 16
//              bytes of whole-texel super-blocks; iq4_xs's d and 6-bit scales, 8 bytes); or read with
//              each step from the super-block (q6_K's int8 scales, q2_K's nibbles, q3_K's 6-bit scales),
//   bits       a value's bits before its scale, offset: what is taken off them (q - offset),
//   table      the levels a 4-bit code indexes (1: mxfp4's e2m1, 2: iq4_nl's; 0: none)).
// The scales decoders (shaders/quant.glsl, q_step): a whole block's head, a super-block's lead (q4_K's
// layout, iq4_xs's), or each step's own (q6_K's, q2_K's, q3_K's layout). From 1: an element type's
// Q_SCALES is 0, none of them.
#define VKGMM_QS_HEAD 1
#define VKGMM_QS_K_LEAD 2
#define VKGMM_QS_IQ4XS_LEAD 3
#define VKGMM_QS_Q6K 4
#define VKGMM_QS_Q2K 5
#define VKGMM_QS_Q3K 6
// Steps of the table's size that one step of a decode's block walk takes (rows per invocation under 16,
// one step in flight): q2_K's four parts of a half super-block, which share its quant bytes, and q3_K's
// (and its hmask bytes) on CPU devices (`cpu`: the texel builds); 1 for the others. On GPUs q3_K's four
// spilled on ANV DG2 and took ACO navi21 to 224 VGPRs.
// Ternaries only: glslang's specialization-constant form of || and && names an undefined id.
#define VKGMM_WIDE_PARTS(scales, cpu) \
  ((scales) == VKGMM_QS_Q2K ? 4u : (cpu) ? ((scales) == VKGMM_QS_Q3K ? 4u : 1u) : 1u)
#define VKGMM_BLOCK_FORMATS(X)                                \
  X(Q8_0, 32, 2, 8, 8, 0, 0, VKGMM_QS_HEAD, 8, 0, 0)          \
  X(Q4_0, 32, 2, 8, 4, 0, 0, VKGMM_QS_HEAD, 4, 8, 0)          \
  X(Q4_K, 64, 0, 8, 8, 1, 0, VKGMM_QS_K_LEAD, 4, 0, 0)        \
  X(Q6_K, 32, 0, 4, 8, 0, 1, VKGMM_QS_Q6K, 6, 32, 0)          \
  X(MXFP4, 32, 1, 8, 4, 0, 0, VKGMM_QS_HEAD, 4, 0, 1)         \
  X(Q4_1, 32, 4, 8, 4, 1, 0, VKGMM_QS_HEAD, 4, 0, 0)          \
  X(Q5_0, 32, 6, 8, 4, 0, 0, VKGMM_QS_HEAD, 5, 16, 0)         \
  X(Q5_1, 32, 8, 8, 4, 1, 0, VKGMM_QS_HEAD, 5, 0, 0)          \
  X(IQ4_NL, 32, 2, 8, 4, 0, 0, VKGMM_QS_HEAD, 4, 0, 2)        \
  X(Q5_K, 32, 0, 8, 8, 1, 1, VKGMM_QS_K_LEAD, 5, 0, 0)        \
  X(IQ4_XS, 32, 0, 8, 4, 0, 0, VKGMM_QS_IQ4XS_LEAD, 4, 0, 2)  \
  X(Q2_K, 32, 0, 4, 8, 1, 0, VKGMM_QS_Q2K, 2, 0, 0)           \
  X(Q3_K, 32, 0, 4, 8, 0, 1, VKGMM_QS_Q3K, 3, 4, 0)

// ----- push constants -----------------------------------------------------------------------------------
// Every op's block starts with its operands' element offsets (relative to where each descriptor is
// bound, or to the buffer's start for texel views): the plan core writes them per record(); the op
// writes the rest once, when the plan is made. Fields are F(type, name) with 32-bit types (uint, float).
#define VKGMM_PUSH_OPERAND_OFFSETS(F) F(uint, lhs_off) F(uint, rhs_off) F(uint, out_off) F(uint, ex_off) \
  F(uint, bias_off)
#define VKGMM_PUSH_OPERAND_WORDS 5

// gmm: the metadata holds group_offsets[G + 1] then the visit list (groups at visits_off, first rows
// num_visits after them); fill visits cover fill_rows rows each (a multiple of the block rows), outside
// the active groups' rows [group_offsets[group_offset], group_offsets[group_offset + G_local]).
// n is the product's width, out_n the output's (n / 2 with SWIGLU). Routed (ROUTED): row r of the m
// rows is slot meta[map_off + r] (t * top_k + j), its lhs row that slot / lhs_div (top_k, or 1 for an
// lhs per slot), its out row the slot; with WEIGHTED its weight is meta[weight_off + r] (float bits).
#define VKGMM_GMM_PUSH(F) VKGMM_PUSH_OPERAND_OFFSETS(F) \
  F(uint, m) F(uint, k) F(uint, n) F(uint, num_visits) F(uint, group_offset) F(uint, visits_off) \
  F(uint, fill_rows) F(uint, out_n) F(uint, lhs_div) F(uint, map_off) F(uint, weight_off) \
  F(uint, visit_count_off) F(uint, top_k) F(uint, partial_off) F(uint, tile_count_off) F(uint, pre_off) \
  F(uint, ids_off) F(uint, route_weights_off) F(uint, status_off) F(uint, window_offset) F(uint, route_experts) \
  F(uint, num_experts) F(uint, num_groups)
// ids_off to num_experts: ROUTE_IN_KERNEL's (VKGMM_ID_GMM_ROUTE_IN_KERNEL), 0 otherwise; ids_off,
// status_off, route_experts and num_groups also SIZES_IN_KERNEL's (VKGMM_ID_GMM_SIZES_IN_KERNEL).
// visit_count_off (PERSISTENT only): 0, num_visits visits; else the count of real visits is
// meta[visit_count_off], written by the device's metadata build and taken at most num_visits.
// FUSED_COMBINE (small routed calls, combined): each row's weighted fp32 result goes to the workspace's
// per-slot results at partial_off ([m, out_n] words at VKGMM_BINDING_ROUTE_WORKSPACE), each workgroup adds the
// rows it wrote to its n tile's counter (word tile_count_off + n tile, zeroed by the metadata build), and
// the workgroup that completes the count of m rows sums that tile's columns for every token, slot by slot
// in order (shaders/combine.glsl), into out. The combine's sum without its dispatch and barrier; the
// counter is an integer atomic, the sum's order fixed: the same bits on every run.
// A visit's group: an active group's index, or one of these.
#define VKGMM_FILL_VISIT (-1)  // rows outside the active groups: existing_out or 0
#define VKGMM_NO_VISIT (-2)    // padding of a list built on the device: the workgroup exits

// tgmm: num_groups output groups, the first being global group group_offset; num_items work items along
// the grid's z (or the persistent loop): the groups, or with SPLIT the metadata's items.
// SPLIT (a reduction split over work items, for skewed groups): item i is VKGMM_TGMM_ITEM_WORDS int32
// words of the metadata from items_off + 4i: its output group (0 .. num_groups - 1; VKGMM_NO_VISIT: padding
// of a list built on the device, skipped), its rows [begin, end), and its
// chunk slot: -1, the group's whole sum, stored to out (+ existing_out); else an fp32 partial sum stored
// in out's layout at element slot * k * n of the partials (VKGMM_BINDING_TGMM_PARTIAL, from bias_off),
// which the combine (shaders/combine.comp) sums for each group in slot order into out.
#define VKGMM_TGMM_PUSH(F) VKGMM_PUSH_OPERAND_OFFSETS(F) \
  F(uint, m) F(uint, k) F(uint, n) F(uint, num_groups) F(uint, group_offset) F(uint, num_items) F(uint, items_off)
#define VKGMM_TGMM_ITEM_WORDS 4
#define VKGMM_TGMM_ITEM_GROUP 0
#define VKGMM_TGMM_ITEM_BEGIN 1
#define VKGMM_TGMM_ITEM_END 2
#define VKGMM_TGMM_ITEM_SLOT 3

// The metadata build on the device (shaders/metadata.comp), for group sizes that live in a device
// buffer: group_offsets[G + 1] (clamped prefix sums) into the workspace and, for gmm, the visit list
// padded to max_visits entries (VKGMM_NO_VISIT); the status word gets the VKGMM_STATUS_* bits.
// Bindings: the sizes (int32 [G]) at VKGMM_BINDING_LHS, the workspace at VKGMM_BINDING_OUT, the status
// word at VKGMM_BINDING_EXISTING; offsets in 32-bit words from where each is bound.
#define VKGMM_ID_META_VISITS 16  // build gmm's visit list too (else the offsets only: tgmm)
// Routing by expert ids first (shaders/routing.glsl): the metadata's group sizes are then the counts of
// each local expert's slots of ids [slots] (int32, at VKGMM_BINDING_LHS, from ids_off), which the prologue
// writes at sizes_off of the workspace (num_local words), and the stable order of the slots: map[r] (at
// map_off) is the slot of row r, the local experts' slots first, expert by expert in slot order, then
// every other slot in slot order; with ROUTE_WEIGHTED, weights (f32 [slots], at VKGMM_BINDING_RHS, from
// weights_off) in that order at weight_rows_off. The window of local experts is [window_offset,
// window_offset + route_experts), ids >= num_experts (when not 0) or below -1 are flagged
// (VKGMM_STATUS_BAD_ID). counts_off: scratch of VKGMM_METADATA_INVOCATIONS * (route_experts + 1) words
// where the slots are more than VKGMM_METADATA_INVOCATIONS (none otherwise: each invocation places its own).
#define VKGMM_ID_META_ROUTE 17
#define VKGMM_ID_META_ROUTE_WEIGHTED 18
// The routing's per-invocation counts (VKGMM_METADATA_INVOCATIONS * (route_experts + 1) words) in shared
// memory, this many words (0: at counts_off of the workspace, or none counted: with at most one slot per
// invocation each places its own). Its scans walk every invocation's count of each bucket in turn: from
// the workspace, each step a round trip to memory on a GPU.
#define VKGMM_ID_META_ROUTE_SHARED_COUNTS 19
// With ROUTE: the routing is given, built by another plan for the same ids, window and experts (its
// workspace at VKGMM_BINDING_META_GIVEN: the counts at given_counts_off, the row map at given_map_off).
// The build copies them instead of counting and ordering the slots, gathers the weights in the map's
// order, and still reads every id for VKGMM_STATUS_BAD_ID. A map entry past the slots (words rewritten
// between the passes) is taken as its own row's slot and flagged (VKGMM_STATUS_BAD_ROUTING).
#define VKGMM_ID_META_ROUTE_GIVEN 20
// tgmm's split reduction for skewed groups (host/tgmm_items.hpp's rule, on the offsets just built): the
// work items (VKGMM_TGMM_ITEM_WORDS each) at visits_off, max_visits of them, the real ones first and the
// rest VKGMM_NO_VISIT; and the combine's list at split_off: the chunks per split group (0: none split),
// the count of split groups, then each one's output group, in order, its chunks taking slots
// i * chunks .. + chunks. The rule's inputs: split_slots (the most slots the workspace holds, at most
// kMostTgmmChunks), split_step (rows per step of the kernel), split_blocks and split_concurrent (an output
// group's blocks, the workgroups the device runs at once: the even share of the rows).
#define VKGMM_ID_META_TGMM_SPLIT 21
// gmm's tile heights per group (host/gmm_tile_heights.hpp's rule on the offsets just built): bit j (j >= 1)
// set, a later pass of the kernel in tiles of tm >> j rows. Each active group's whole tiles of tm are the
// first pass's; its last rows (past them) take the height, tm or a later pass's, whose visits cost least,
// each visit costing its rows plus VISIT_OVERHEAD (ties to the larger height). Later pass p (1, 2, ... from
// the largest height down) has its visit list of later_visits slots (groups, then first rows, as the first
// pass's) at word visits_off + 2 * max_visits + VKGMM_DISPATCH_WORDS + (p - 1) * (2 * later_visits +
// VKGMM_DISPATCH_WORDS), its indirect command and visit count after its list; the fill visits are the first
// pass's. 0: one pass.
#define VKGMM_ID_META_HEIGHTS 22
#define VKGMM_ID_META_VISIT_OVERHEAD 23
// The gmm grid has two forms (ContextOptions::device_grid), chosen per record() by dispatch_off:
// - 0, the upper-bound grid: the host dispatches (n tiles) x max_visits, the R real visits are spread
//   over the max_visits slots and the surplus workgroups exit at once;
// - else the indirect grid: the R real visits fill slots [0, R), and the build writes the
//   VkDispatchIndirectCommand {grid_x, y, z} at word dispatch_off of the workspace (y = min(R, grid_y),
//   z = ceil(R / y); R = 0: a dispatch of no workgroups), which vkCmdDispatchIndirect reads, and R itself
//   after it (VKGMM_DISPATCH_WORDS in all), which the persistent grid's workgroups loop up to (that grid
//   packs the visits the same way, and dispatches its fixed count directly).
// A push field, not a specialization constant: whether the workspace can be an indirect buffer is
// known only at record() (an app's workspace), and one pipeline then serves both.
#define VKGMM_DISPATCH_WORDS 4
#define VKGMM_DISPATCH_COUNT_WORD 3  // R's word after the command's first
#define VKGMM_METADATA_PUSH(F) F(uint, sizes_off) F(uint, status_off) F(uint, num_groups) \
  F(uint, group_offset) F(uint, num_local) F(uint, m) F(uint, tm) F(uint, fill_rows) F(uint, visits_off) \
  F(uint, max_visits) F(uint, dispatch_off) F(uint, grid_x) F(uint, grid_y) \
  F(uint, ids_off) F(uint, weights_off) F(uint, slots) F(uint, window_offset) F(uint, route_experts) \
  F(uint, num_experts) F(uint, counts_off) F(uint, map_off) F(uint, weight_rows_off) \
  F(uint, tile_count_off) F(uint, tile_counts) F(uint, given_counts_off) F(uint, given_map_off) \
  F(uint, split_off) F(uint, split_slots) F(uint, split_step) F(uint, split_blocks) F(uint, split_concurrent) \
  F(uint, later_visits)
#define VKGMM_SPLIT_LIST_HEAD 2  // the split list's words before its groups: chunks, count
// tile_counts words from tile_count_off of the workspace are zeroed (a gmm with FUSED_COMBINE counts there).
// Invocations of the metadata build: few, because on CPU drivers every barrier() of a workgroup switches
// between all its invocations (decode with its device sizes, lavapipe: dev/host 1.04-1.36 with 32,
// 1.55-1.64 with 8, 1.20-1.65 with 256); each takes a chunk of G / 32 groups.
#define VKGMM_METADATA_INVOCATIONS 32
// Status bits: what the device found in the group sizes, and how it was taken.
#define VKGMM_STATUS_NEGATIVE_SIZE 1u  // a size was negative: taken as 0
#define VKGMM_STATUS_SUM_ABOVE_M 2u    // the sizes add up to more than m: every offset clamped at m
#define VKGMM_STATUS_VISITS_CUT 4u     // more visits than the plan's bound (cannot happen; rows left unwritten)
#define VKGMM_STATUS_BAD_ID 8u         // routing: an id below -1 or >= num_experts (the slot skipped)
#define VKGMM_STATUS_BAD_ROUTING 16u   // a given routing's map held a slot past the slots (ROUTE_GIVEN)

// The ordered combine of routed slots (shaders/combine.comp): out[t, c] = sum over j ascending of the
// per-slot fp32 results part[t * top_k + j, c] (at VKGMM_BINDING_LHS), + existing_out[t, c] with
// HAS_EXISTING, rounded once to OUT_TYPE. One invocation per output element: (out_n / 64) x tokens.
#define VKGMM_COMBINE_INVOCATIONS 64
// With LISTED (tgmm's split reduction built on the device) the rows come from the metadata build's split
// list at word list_off of the same binding (VKGMM_ID_META_TGMM_SPLIT): entry t (below its count and
// `tokens`) sums slots t * chunks .. + chunks into out's row (output group) list[t], below out_rows; top_k
// is the most slots the list may use.
#define VKGMM_ID_COMBINE_LISTED 16
#define VKGMM_COMBINE_PUSH(F) VKGMM_PUSH_OPERAND_OFFSETS(F) F(uint, tokens) F(uint, top_k) F(uint, out_n) \
  F(uint, list_off) F(uint, out_rows)

// Top-k routing of router logits (shaders/topk.comp, TopKPlan): for each token t, the top_k experts of
// logits[t, 0 .. experts) (f32, at VKGMM_BINDING_LHS) by logit, highest first (ties: the lower expert
// first; NaN ranks as -inf), as ids[t, j] (int32, at VKGMM_BINDING_OUT) and weights[t, j] (f32, at
// VKGMM_BINDING_RHS, written: the one module whose rhs is an output) = the softmax over all experts of
// the chosen logits, with RENORMALIZE divided by their sum over the top_k. One invocation per token.
#define VKGMM_ID_TOPK_RENORMALIZE 16
#define VKGMM_TOPK_INVOCATIONS 64
#define VKGMM_TOPK_PUSH(F) F(uint, logits_off) F(uint, ids_off) F(uint, weights_off) F(uint, tokens) \
  F(uint, experts) F(uint, top_k)

// Top-k routing's gradient to the logits (shaders/topk_grad.comp, TopKBackwardPlan), one invocation per
// token (VKGMM_TOPK_INVOCATIONS, the forward's grid), given d_weights [T, top_k] (f32) for the forward's
// ids and weights. With RENORMALIZE, d_logits[t, e] = sum over the slots j with ids[t, j] = e of
// w_j * (d_w_j - s), s = sum over the valid slots of d_w_j * w_j; without, d_logits[t, e] = p_e * (g_e - s),
// p the softmax over all experts (recomputed from the logits as topk.comp does), g_e the sum of d_w_j
// over the slots with ids[t, j] = e. Ids outside [0, experts) are skipped. With ACCUMULATE, d_logits +=.
#define VKGMM_ID_TOPK_GRAD_ACCUMULATE 17
#define VKGMM_TOPK_GRAD_PUSH(F) F(uint, logits_off) F(uint, ids_off) F(uint, weights_off) F(uint, d_weights_off) \
  F(uint, d_logits_off) F(uint, tokens) F(uint, experts) F(uint, top_k)

// The gradient of a routed gmm's epilogue (shaders/routed_grad.comp, the routed GmmBackwardPlan), one
// workgroup per row r of the routing build's expert order (strided past the grid), slot s = route[map_off
// + r], token t = s / top_k; rows r < route[offsets_off + num_local] are the local slots'. Given the
// pre-activation h (f32 [slots, n] at pre[pre_off], the forward's product + bias per slot: saved by the
// forward or recomputed) and d_out (OUT_TYPE: [T, out_n] combined, else [slots, out_n]): dy = d_out[s]
// or weights[s] * d_out[t]; d_h = dy through the activation (ACTIVATION); written per slot at
// d_h[h_off + s * n] (for d_lhs) and at sorted[sorted_off + r * n] (expert order, for d_rhs and d_bias);
// lhs row s / lhs_div gathered at gathered[a_off + r * k] (f32); work[ones_off + r] = 1; with COMBINED
// d_weights[s] = <d_out[t], y(s)> (0 for other slots), + its value with ACCUMULATE. Every loop is
// bounded by k, n and the slot count. The workgroup is VKGMM_ID_INVOCATIONS invocations, a power of two
// (the host's choice: a CPU driver runs a workgroup of more than one subgroup as coroutines that switch at
// every barrier, and the combined row's sum has a barrier per halving).
#define VKGMM_ID_GRAD_COMBINED 16
#define VKGMM_ID_GRAD_ACCUMULATE 17
#define VKGMM_ID_GRAD_ACTIVATION 18
#define VKGMM_GRAD_PUSH(F) F(uint, lhs_off) F(uint, d_out_off) F(uint, weights_off) F(uint, d_weights_off) \
  F(uint, map_off) F(uint, offsets_off) F(uint, num_local) F(uint, h_off) F(uint, sorted_off) F(uint, a_off) \
  F(uint, ones_off) F(uint, slots) F(uint, top_k) F(uint, lhs_div) F(uint, k) F(uint, n) F(uint, out_n) \
  F(uint, pre_off)

// The bench's FMA ceiling kernel (shaders/fma_ceiling.comp).
#define VKGMM_ID_CEILING_ITERS 1
#define VKGMM_ID_CEILING_CHAINS 2  // independent FMA chains per invocation
#define VKGMM_CEILING_PUSH(F) F(float, seed)

// The bench's read-bandwidth kernel (shaders/read_ceiling.comp): `count` 16-byte vectors from vector
// `first` of the LHS binding (of its texel view in the VKGMM_TEXEL build), summed per workgroup into
// word out_off + workgroup of OUT. Its only constant is the workgroup size (VKGMM_ID_INVOCATIONS).
#define VKGMM_READ_PUSH(F) F(uint, first) F(uint, count) F(uint, out_off)

#endif
