// Cooperative matrices of one subgroup, in whichever GLSL extension the build uses (VKGMM_MATRIX: 1 for
// GL_NV_cooperative_matrix, 2 for GL_KHR_cooperative_matrix): f16 inputs A [CM_M, CM_K] and B [CM_K, CM_N],
// an f32 accumulator [CM_M, CM_N]. Offsets and strides count elements of the array loaded or stored.
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_memory_scope_semantics : require
#if VKGMM_MATRIX == 1
#extension GL_NV_cooperative_matrix : require
#define VKGMM_CM_A fcoopmatNV<16, gl_ScopeSubgroup, CM_M, CM_K>
#define VKGMM_CM_B fcoopmatNV<16, gl_ScopeSubgroup, CM_K, CM_N>
#define VKGMM_CM_ACC fcoopmatNV<32, gl_ScopeSubgroup, CM_M, CM_N>
#define VKGMM_CM_LOAD_COLUMNS(m, array, at, stride) coopMatLoadNV(m, array, at, stride, true)
#define VKGMM_CM_LOAD_ROWS(m, array, at, stride) coopMatLoadNV(m, array, at, stride, false)
#define VKGMM_CM_STORE_ROWS(m, array, at, stride) coopMatStoreNV(m, array, at, stride, false)
#define VKGMM_CM_MUL_ADD(a, b, c) coopMatMulAddNV(a, b, c)
#elif VKGMM_MATRIX == 2
#extension GL_KHR_cooperative_matrix : require
#define VKGMM_CM_A coopmat<float16_t, gl_ScopeSubgroup, CM_M, CM_K, gl_MatrixUseA>
#define VKGMM_CM_B coopmat<float16_t, gl_ScopeSubgroup, CM_K, CM_N, gl_MatrixUseB>
#define VKGMM_CM_ACC coopmat<float, gl_ScopeSubgroup, CM_M, CM_N, gl_MatrixUseAccumulator>
#define VKGMM_CM_LOAD_COLUMNS(m, array, at, stride) coopMatLoad(m, array, at, stride, gl_CooperativeMatrixLayoutColumnMajor)
#define VKGMM_CM_LOAD_ROWS(m, array, at, stride) coopMatLoad(m, array, at, stride, gl_CooperativeMatrixLayoutRowMajor)
#define VKGMM_CM_STORE_ROWS(m, array, at, stride) coopMatStore(m, array, at, stride, gl_CooperativeMatrixLayoutRowMajor)
#define VKGMM_CM_MUL_ADD(a, b, c) coopMatMulAdd(a, b, c)
#else
#error "VKGMM_MATRIX is 1 (NV) or 2 (KHR)"
#endif
