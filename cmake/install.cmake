# `cmake --install`: the public headers, both libraries, the CLI, a CMake package (find_package(vkgmm) ->
# vkgmm::vkgmm, vkgmm::vkgmm_static) and a pkg-config file. Everything is found relative to where it was
# installed, so an installed tree may be moved.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(VKGMM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/vkgmm)

install(TARGETS vkgmm_shared vkgmm_static EXPORT vkgmmTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS vkgmm_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${VKGMM_PUBLIC_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/vkgmm)  # public headers only

install(EXPORT vkgmmTargets NAMESPACE vkgmm:: DESTINATION ${VKGMM_CMAKE_DIR})
configure_package_config_file(cmake/vkgmmConfig.cmake.in ${PROJECT_BINARY_DIR}/vkgmmConfig.cmake
  INSTALL_DESTINATION ${VKGMM_CMAKE_DIR})
# Pre-1.0 minor releases may change the API, so a request for 0.1 accepts 0.1.x only; from 1.0 on,
# any later version with the same major.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(VKGMM_COMPATIBILITY SameMinorVersion)
else()
  set(VKGMM_COMPATIBILITY SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/vkgmmConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${VKGMM_COMPATIBILITY})
install(FILES ${PROJECT_BINARY_DIR}/vkgmmConfig.cmake ${PROJECT_BINARY_DIR}/vkgmmConfigVersion.cmake
  DESTINATION ${VKGMM_CMAKE_DIR})

# pkg-config: the prefix is computed from the .pc file's own location (${pcfiledir}), which keeps the
# installed tree relocatable; an absolute libdir (rare) falls back to the configured prefix.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(VKGMM_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH VKGMM_PC_UP "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
  string(REGEX REPLACE "/$" "" VKGMM_PC_UP "${VKGMM_PC_UP}")
  set(VKGMM_PC_PREFIX "\${pcfiledir}/${VKGMM_PC_UP}")
endif()
configure_file(cmake/vkgmm.pc.in ${PROJECT_BINARY_DIR}/vkgmm.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/vkgmm.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
