# Compile a GLSL compute shader to SPIR-V at build time, validate it with spirv-val (a failure fails the
# build), and embed it in the library as a uint32 array: nothing is read from disk at run time.
#
# vkgmm_embed_shader(<target> <name> <source> [DEFINES D1 D2 ...]) adds to <target> a source defining
#   const uint32_t vkgmm::spirv::<name>[]; const size_t vkgmm::spirv::<name>_words;
# DEFINES build a variant of one source (e.g. one that needs a device feature the base module must not
# declare); everything else varies by specialization constant.
# glslc's depfile makes edits to included .glsl files rebuild the module.

find_program(VKGMM_SPIRV_VAL spirv-val REQUIRED)
set(VKGMM_SPIRV_ENV vulkan1.2)
# The shader compiler: -DVKGMM_GLSLC=<glslc> picks one (a glslc that knows newer GLSL extensions; give
# its spirv-val with -DVKGMM_SPIRV_VAL=<spirv-val>). Else Debian trixie's glslc and spirv-val where
# scripts/gpu_compilers.sh fetched them (scripts/install_deps.sh does, into build/gpu-compilers or
# $VKGMM_GPU_COMPILERS): Debian 12's glslc cannot emit the KHR cooperative-matrix builds. Else the one
# find_package(Vulkan) found.
set(VKGMM_GLSLC "" CACHE FILEPATH "glslc to compile the shaders with (default: trixie's, fetched, else the Vulkan SDK's)")
set(VKGMM_FETCHED_COMPILERS "$ENV{VKGMM_GPU_COMPILERS}")
if(NOT VKGMM_FETCHED_COMPILERS)
  set(VKGMM_FETCHED_COMPILERS ${PROJECT_SOURCE_DIR}/build/gpu-compilers)
endif()
if(VKGMM_GLSLC)
  set(Vulkan_GLSLC_EXECUTABLE ${VKGMM_GLSLC})
elseif(EXISTS ${VKGMM_FETCHED_COMPILERS}/wrap/glslc AND EXISTS ${VKGMM_FETCHED_COMPILERS}/wrap/spirv-val)
  set(Vulkan_GLSLC_EXECUTABLE ${VKGMM_FETCHED_COMPILERS}/wrap/glslc)
  set(VKGMM_SPIRV_VAL ${VKGMM_FETCHED_COMPILERS}/wrap/spirv-val)
endif()

# Whether the configured glslc emits, and spirv-val accepts, a GLSL extension: compiles a probe that
# enables `extension` and runs `body` in main(); sets <result> ON or OFF in the caller's scope (run at every
# configure).
function(vkgmm_glslc_knows result extension body)
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/glslc_probes)
  file(MAKE_DIRECTORY ${dir})
  file(WRITE ${dir}/${extension}.comp "#version 450\n#extension ${extension} : require\n"
       "#extension GL_KHR_memory_scope_semantics : require\n"
       "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n"
       "layout(local_size_x = 32) in;\nvoid main() {\n${body}\n}\n")
  execute_process(COMMAND ${Vulkan_GLSLC_EXECUTABLE} --target-env=${VKGMM_SPIRV_ENV} -fshader-stage=compute
                          -o ${dir}/${extension}.spv ${dir}/${extension}.comp
                  RESULT_VARIABLE compiled OUTPUT_QUIET ERROR_QUIET)
  set(ok OFF)
  if(compiled EQUAL 0)
    execute_process(COMMAND ${VKGMM_SPIRV_VAL} --target-env ${VKGMM_SPIRV_ENV} ${dir}/${extension}.spv
                    RESULT_VARIABLE validated OUTPUT_QUIET ERROR_QUIET)
    if(validated EQUAL 0)
      set(ok ON)
    endif()
  endif()
  set(${result} ${ok} PARENT_SCOPE)
endfunction()

function(vkgmm_embed_shader target name source)
  cmake_parse_arguments(ARG "" "" "DEFINES" ${ARGN})
  set(defs)
  foreach(d IN LISTS ARG_DEFINES)
    list(APPEND defs -D${d})
  endforeach()
  set(src ${CMAKE_CURRENT_SOURCE_DIR}/${source})
  set(outdir ${CMAKE_CURRENT_BINARY_DIR}/spirv)
  set(spv ${outdir}/${name}.spv)
  set(inc ${outdir}/${name}.inc)
  set(cpp ${outdir}/${name}_spirv.cpp)
  file(MAKE_DIRECTORY ${outdir})
  add_custom_command(
    OUTPUT ${spv} ${inc}
    COMMAND ${Vulkan_GLSLC_EXECUTABLE} --target-env=${VKGMM_SPIRV_ENV} -fshader-stage=compute ${defs}
            -MD -MF ${spv}.d -MT ${spv} -o ${spv} ${src}
    COMMAND ${VKGMM_SPIRV_VAL} --target-env ${VKGMM_SPIRV_ENV} ${spv}
    COMMAND ${Vulkan_GLSLC_EXECUTABLE} --target-env=${VKGMM_SPIRV_ENV} -fshader-stage=compute ${defs}
            -mfmt=num -o ${inc} ${src}
    DEPENDS ${src} ${Vulkan_GLSLC_EXECUTABLE}
    DEPFILE ${spv}.d
    COMMENT "glslc + spirv-val ${source}"
    VERBATIM)
  file(WRITE ${cpp}.in
    "// Generated from ${source}.\n#include <cstddef>\n#include <cstdint>\n"
    "namespace vkgmm::spirv {\nextern const uint32_t ${name}[] = {\n#include \"${name}.inc\"\n};\n"
    "extern const size_t ${name}_words = sizeof(${name}) / sizeof(uint32_t);\n}\n")
  configure_file(${cpp}.in ${cpp} COPYONLY)
  set_source_files_properties(${cpp} PROPERTIES OBJECT_DEPENDS ${inc})
  target_sources(${target} PRIVATE ${cpp})
endfunction()

# vkgmm_embed_op_modules(<target> OPS <op>... VARIANTS <variant>...): every op's shaders/<op>.comp built in
# every variant, with the defines the list VKGMM_OP_VARIANT_<variant> holds; the plain variant's module is
# named <op>, the others <op>_<variant>. It also writes op_modules.inc, one line
#   VKGMM_OP_MODULE(<module name>, <op>, <variant>, <blocks>)
# per module, on <target>'s include path: host/shader_modules.cpp expands it into its declarations and
# tables, so that the modules are listed once, in the call.
# MATRIX_OPS <op>... MATRIX_VARIANTS <variant>... and SUBGROUP_OPS <op>... SUBGROUP_VARIANTS <variant>...
# add those variants for those ops only. BLOCK_OPS <op>...: those ops' every variant built a second time
# with VKGMM_BLOCK_RHS (rhs in a block format), named <op>_blocks[_<variant>], <blocks> true.
function(vkgmm_embed_op_modules target)
  cmake_parse_arguments(ARG "" "" "OPS;VARIANTS;MATRIX_OPS;MATRIX_VARIANTS;SUBGROUP_OPS;SUBGROUP_VARIANTS;BLOCK_OPS" ${ARGN})
  set(lines "// Generated by vkgmm_embed_op_modules (cmake/shaders.cmake) from the lists in CMakeLists.txt.\n")
  foreach(op IN LISTS ARG_OPS)
    set(variants ${ARG_VARIANTS})
    if(op IN_LIST ARG_MATRIX_OPS)
      list(APPEND variants ${ARG_MATRIX_VARIANTS})
    endif()
    if(op IN_LIST ARG_SUBGROUP_OPS)
      list(APPEND variants ${ARG_SUBGROUP_VARIANTS})
    endif()
    set(kinds elements)
    if(op IN_LIST ARG_BLOCK_OPS)
      list(APPEND kinds blocks)
    endif()
    foreach(kind IN LISTS kinds)
      foreach(variant IN LISTS variants)
        set(name ${op})
        set(defines ${VKGMM_OP_VARIANT_${variant}})
        set(blocks false)
        if(kind STREQUAL "blocks")
          string(APPEND name _blocks)
          list(APPEND defines VKGMM_BLOCK_RHS)
          set(blocks true)
        endif()
        if(NOT variant STREQUAL "plain")
          string(APPEND name _${variant})
        endif()
        vkgmm_embed_shader(${target} ${name} shaders/${op}.comp DEFINES ${defines})
        string(APPEND lines "VKGMM_OP_MODULE(${name}, ${op}, ${variant}, ${blocks})\n")
      endforeach()
    endforeach()
  endforeach()
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/generated)
  file(WRITE ${dir}/op_modules.inc.in "${lines}")
  # Copied only when the list changed, so that a re-configure does not rebuild shader_modules.cpp.
  configure_file(${dir}/op_modules.inc.in ${dir}/op_modules.inc COPYONLY)
  target_include_directories(${target} PRIVATE ${dir})
endfunction()
