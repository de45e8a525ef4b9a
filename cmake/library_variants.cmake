# The installable libraries, both built from the objects of the `vkgmm` OBJECT library (so the embedded
# shaders are compiled once and land in both):
#   vkgmm_shared  libvkgmm.so.<version>, SONAME libvkgmm.so.<major>, exported as vkgmm::vkgmm
#   vkgmm_static  libvkgmm.a,                                         exported as vkgmm::vkgmm_static
# In the tree, the tests and the CLI link the objects directly; the examples link vkgmm::vkgmm, the
# shared library, as an installed consumer would.
#
# The public API is what the installed headers declare, and all the shared library exports: the objects
# are compiled with hidden visibility, and the public headers mark what leaves the library with VKGMM_API
# (include/vkgmm/export.h). The installed headers are C++17 (a consumer needs no more, and the
# imported targets ask for no more), while the library itself is built as C++20.
# Headers only the tests, fuzz targets, CLI and bench use live in host/internal_include/ and are not
# installed; those in-tree users get them through the `vkgmm` OBJECT library.
set(VKGMM_PUBLIC_HEADERS
  include/vkgmm/export.h
  include/vkgmm/vocabulary.h
  include/vkgmm/vkgmm.h
  include/vkgmm/vkgmm.hpp
  include/vkgmm/types.hpp
  include/vkgmm/context.hpp
  include/vkgmm/ops.hpp
  include/vkgmm/top_k.hpp
  include/vkgmm/moe_layer.hpp
  include/vkgmm/vkgmm_top_k.h
  include/vkgmm/vkgmm_moe.h
  include/vkgmm/requirements.hpp
  include/vkgmm/convert.hpp
)

include(GNUInstallDirs)

# Only errors.cpp reports the version: a version bump rebuilds one file.
set_source_files_properties(host/c_api/errors.cpp PROPERTIES
  COMPILE_DEFINITIONS "VKGMM_VERSION_STRING=\"${PROJECT_VERSION}\"")
# The same objects go into the shared library, which exports only what VKGMM_API marks.
set_target_properties(vkgmm PROPERTIES POSITION_INDEPENDENT_CODE ON
  CXX_VISIBILITY_PRESET hidden C_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)

# SONAME libvkgmm.so.<major>: a consumer built against 0.x runs against any later 0.y that keeps the ABI.
add_library(vkgmm_shared SHARED $<TARGET_OBJECTS:vkgmm>)
set_target_properties(vkgmm_shared PROPERTIES
  OUTPUT_NAME vkgmm EXPORT_NAME vkgmm VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
add_library(vkgmm_static STATIC $<TARGET_OBJECTS:vkgmm>)
set_target_properties(vkgmm_static PROPERTIES OUTPUT_NAME vkgmm EXPORT_NAME vkgmm_static)

foreach(lib vkgmm_shared vkgmm_static)
  target_include_directories(${lib} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  # Threads is PRIVATE: for the static library CMake still passes it on as a link-only dependency.
  target_link_libraries(${lib} PUBLIC Vulkan::Vulkan PRIVATE Threads::Threads)
  target_compile_features(${lib} INTERFACE cxx_std_17)
endforeach()

# The names an installed consumer uses, available in the tree too (the examples build either way).
add_library(vkgmm::vkgmm ALIAS vkgmm_shared)
add_library(vkgmm::vkgmm_static ALIAS vkgmm_static)
