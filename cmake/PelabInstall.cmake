# The SDK: headers, libpelab_core, the plugins, the `pelab` CLI, and a CMake package so that a
# third party writes `find_package(pelab)` and `pelab_add_plugin(...)`.
include(CMakePackageConfigHelpers)

install(EXPORT pelabTargets NAMESPACE pelab:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pelab)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/pelabConfig.cmake.in
  ${CMAKE_BINARY_DIR}/pelabConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pelab)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/pelabConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/pelabConfig.cmake ${CMAKE_BINARY_DIR}/pelabConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/PelabPlugin.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pelab)
