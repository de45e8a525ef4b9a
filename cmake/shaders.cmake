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
    DEPENDS ${src}
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
