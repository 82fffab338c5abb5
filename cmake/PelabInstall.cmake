# The SDK: headers, libpelab_core, the plugins, the `pelab` CLI, and a CMake package so that a
# third party writes `find_package(pelab)` and `pelab_add_plugin(...)`.
include(CMakePackageConfigHelpers)

install(EXPORT pelabTargets NAMESPACE pelab:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pelab)
# The plugin API version the SDK is for, read from plugin.h so that the two never disagree.
file(STRINGS ${PROJECT_SOURCE_DIR}/core/include/pelab/plugins/plugin.h PELAB_PLUGIN_API_LINE
     REGEX "kPluginApiVersion = [0-9]+;")
string(REGEX REPLACE ".*kPluginApiVersion = ([0-9]+);.*" "\\1" PELAB_PLUGIN_API_VERSION
                     "${PELAB_PLUGIN_API_LINE}")
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/pelabConfig.cmake.in
  ${CMAKE_BINARY_DIR}/pelabConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pelab)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/pelabConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/pelabConfig.cmake ${CMAKE_BINARY_DIR}/pelabConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/PelabPlugin.cmake
              ${CMAKE_CURRENT_LIST_DIR}/PelabTorchCompat.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pelab)
