/* vkgmm's vocabularies, each listed once as an X-macro that every spelling of it is made from: the C
 * and C++ enums, the names the API, the CLI and Python parse, the shaders' constants, the C API's
 * checks. Plain preprocessor lines only, so that C, C++ and GLSL (through shaders/interface.h) all read
 * this one file.
 *
 * VKGMM_ACTIVATIONS(X): gmm's epilogue activations, X(name, NAME, value, gated), in value order:
 *   name   the C++ enumerator (vkgmm::Activation::name) and the text activation_of_name() parses;
 *   NAME   the C enumerator's suffix (VKGMM_ACTIVATION_NAME) and the shaders' VKGMM_ACT_NAME;
 *   value  the number every spelling shares;
 *   gated  1 where the activation takes the product's n columns as [gate | up] (gate first; n even)
 *          and gives n / 2 columns.
 * The gated ones, with gelu's tanh form gelu(x) = x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))):
 *   swiglu:     silu(gate) * up, silu(x) = x / (1 + exp(-x));
 *   swiglu_oai: gpt-oss's clamped SwiGLU: g = min(gate, 7), u = clamp(up, -7, 7),
 *               (u + 1) * g * sigmoid(1.702 g);
 *   geglu:      gelu(gate) * up.
 * A new activation is a row here plus its math: shaders/activation.glsl (value and derivatives) and
 * reference/activations.hpp (and the reference backward's derivative, reference/routed_backward.cpp).
 *
 * VKGMM_DTYPES(X): the element types, then GGUF's block formats (gmm's rhs only: ggml's block_* structs
 * byte for byte, blocks of values along k), X(name, NAME, value, values, bytes, ggml), in value order:
 *   name    vkgmm::DType::name and dtype_name()'s text (parse_dtype also takes NumPy's spellings, and
 *           the block formats in any case);
 *   NAME    the C enumerator (VKGMM_NAME) and the shaders' VKGMM_DT_NAME;
 *   values  values per block (1: an element type), bytes: bytes per block (an element's bytes);
 *   ggml    the type's number in GGUF files (ggml_type).
 * A new block format is a row here, its decoder's facts in shaders/interface.h (VKGMM_BLOCK_FORMATS), its
 * head's fields in shaders/quant.glsl where its layout is new, and its codec in reference/quant_*.cpp.
 *
 * VKGMM_SCHEDULES(X), VKGMM_DEVICE_GRIDS(X), VKGMM_GRIDS(X): the kernel choices a context or a problem may
 * force (vkgmm::Schedule, DeviceGrid, Grid; vkgmm/types.hpp says what each does), X(name, NAME, value), in
 * value order:
 *   name   the C++ enumerator and its text: what the names give (schedule_name, choice_name) and what
 *          every parser takes ($VKGMM_SCHEDULE, $VKGMM_DEVICE_GRID, $VKGMM_GRID, Python's Context);
 *   NAME   the C enumerator's suffix (VKGMM_SCHEDULE_NAME, VKGMM_DEVICE_GRID_NAME, VKGMM_GRID_NAME).
 * Schedules: automatic (by device type and problem), shared (tiles staged in shared memory), direct
 * (register micro-tiles read straight from the buffers), matrix (the matrix units, f16 inputs). Device
 * grids, for gmm's group sizes on the device: automatic (indirect), indirect (vkCmdDispatchIndirect with
 * the grid the metadata build writes), upper_bound (the plan's bound; surplus workgroups exit at once).
 * Grids: automatic (per_visit), per_visit (a workgroup per work item), persistent (a fixed count of
 * workgroups, each looping over the items).
 */
#ifndef VKGMM_VOCABULARY_H
#define VKGMM_VOCABULARY_H

#define VKGMM_ACTIVATIONS(X)      \
  X(none, NONE, 0, 0)             \
  X(swiglu, SWIGLU, 1, 1)         \
  X(swiglu_oai, SWIGLU_OAI, 2, 1) \
  X(geglu, GEGLU, 3, 1)

#define VKGMM_DTYPES(X)               \
  X(f32, F32, 0, 1, 4, 0)             \
  X(f16, F16, 1, 1, 2, 1)             \
  X(bf16, BF16, 2, 1, 2, 30)          \
  X(q8_0, Q8_0, 3, 32, 34, 8)         \
  X(q4_0, Q4_0, 4, 32, 18, 2)         \
  X(q4_K, Q4_K, 5, 256, 144, 12)      \
  X(q6_K, Q6_K, 6, 256, 210, 14)      \
  X(mxfp4, MXFP4, 7, 32, 17, 39)      \
  X(q4_1, Q4_1, 8, 32, 20, 3)         \
  X(q5_0, Q5_0, 9, 32, 22, 6)         \
  X(q5_1, Q5_1, 10, 32, 24, 7)        \
  X(iq4_nl, IQ4_NL, 11, 32, 18, 20)   \
  X(q5_K, Q5_K, 12, 256, 176, 13)     \
  X(iq4_xs, IQ4_XS, 13, 256, 136, 23) \
  X(q2_K, Q2_K, 14, 256, 84, 10)      \
  X(q3_K, Q3_K, 15, 256, 110, 11)

#define VKGMM_SCHEDULES(X) \
  X(automatic, AUTO, 0)    \
  X(shared, SHARED, 1)     \
  X(direct, DIRECT, 2)     \
  X(matrix, MATRIX, 3)

#define VKGMM_DEVICE_GRIDS(X) \
  X(automatic, AUTO, 0)       \
  X(indirect, INDIRECT, 1)    \
  X(upper_bound, UPPER_BOUND, 2)

#define VKGMM_GRIDS(X)       \
  X(automatic, AUTO, 0)      \
  X(per_visit, PER_VISIT, 1) \
  X(persistent, PERSISTENT, 2)

#endif /* VKGMM_VOCABULARY_H */
