# install.cmake - what `cmake --install` adds besides the targets themselves
# (installed where they are defined: loader/, cli/): the CMake package
#   find_package(gllm_kernels CONFIG)  ->  gk::gk, gk::gk_static, gk::cli,
#                                          gk_embed_archive()
# and the pkg-config file gk.pc. Both are relocatable: they find the prefix
# from their own location, so `cmake --install build --prefix DIR` works for
# any DIR chosen at install time.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(GK_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/gllm_kernels)
install(EXPORT gllm_kernelsTargets NAMESPACE gk::
  DESTINATION ${GK_CMAKE_INSTALL_DIR})
install(EXPORT gllm_kernelsStaticTargets NAMESPACE gk::
  DESTINATION ${GK_CMAKE_INSTALL_DIR})
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/gllm_kernelsConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gllm_kernelsConfig.cmake
  INSTALL_DESTINATION ${GK_CMAKE_INSTALL_DIR})
# 0.x: a new minor version may break the API, so only the same minor matches.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/gllm_kernelsConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/gllm_kernelsConfig.cmake
  ${PROJECT_BINARY_DIR}/gllm_kernelsConfigVersion.cmake
  ${CMAKE_CURRENT_LIST_DIR}/gk_embed_archive.cmake
  DESTINATION ${GK_CMAKE_INSTALL_DIR})

# gk.pc names its prefix relative to its own folder (${pcfiledir}).
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(GK_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(GK_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH rel "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" rel "${rel}")
  set(GK_PC_PREFIX "\${pcfiledir}/${rel}")
  set(GK_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(GK_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(GK_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
# Written where no pkg-config search finds it: its paths are the installed
# tree's, so in the build tree it would name headers and libraries that
# are not there (a build tree is used through CMake, not pkg-config).
configure_file(${CMAKE_CURRENT_LIST_DIR}/gk.pc.in ${PROJECT_BINARY_DIR}/for-install/gk.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/for-install/gk.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
