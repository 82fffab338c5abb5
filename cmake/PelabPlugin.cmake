# pelab_add_plugin(NAME <name> KIND pe|init|task|probe SOURCES <files...>
#                  [LIBRARIES <targets...>] [DATA <files...>])
#
# Builds `libpelab_<kind>_<name>.so`, the file name the registry looks for, with hidden visibility
# so that only the plugin entry is exported. DATA files are copied to `share/pelab/<name>/`, where
# PluginContext::data_dir points. Used in the source tree and, through find_package(pelab), by
# third-party plugins.
function(pelab_add_plugin)
  cmake_parse_arguments(ARG "" "NAME;KIND" "SOURCES;LIBRARIES;DATA" ${ARGN})
  if(NOT ARG_NAME OR NOT ARG_KIND OR NOT ARG_SOURCES)
    message(FATAL_ERROR "pelab_add_plugin: NAME, KIND and SOURCES are required")
  endif()
  if(NOT ARG_KIND MATCHES "^(pe|init|task|probe)$")
    message(FATAL_ERROR "pelab_add_plugin(${ARG_NAME}): KIND must be pe, init, task or probe, "
                        "not '${ARG_KIND}'")
  endif()
  if(NOT ARG_NAME MATCHES "^[a-z0-9_]+$")
    message(FATAL_ERROR "pelab_add_plugin: NAME '${ARG_NAME}' must be lower-case letters, "
                        "digits and underscores")
  endif()

  set(target pelab_${ARG_KIND}_${ARG_NAME})
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE pelab::core ${ARG_LIBRARIES})
  # Without --no-as-needed the linker may drop libtorch, and dlopen then fails on
  # `vtable for torch::nn::Module`.
  target_link_options(${target} PRIVATE -Wl,--no-as-needed)
  if(NOT PELAB_PLUGIN_OUTPUT_DIR)
    set(PELAB_PLUGIN_OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR})
  endif()
  set(install_rpath "$ORIGIN/../.." ${PELAB_TORCH_RUNTIME_DIRS})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME pelab_${ARG_KIND}_${ARG_NAME}
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY ${PELAB_PLUGIN_OUTPUT_DIR}
    INSTALL_RPATH "${install_rpath}")
  if(COMMAND pelab_use_pch)
    pelab_use_pch(${target} plugin)
  endif()

  if(ARG_DATA)
    if(PELAB_DATA_OUTPUT_DIR)
      set(data_dir ${PELAB_DATA_OUTPUT_DIR}/${ARG_NAME})
    else()
      set(data_dir ${CMAKE_CURRENT_BINARY_DIR}/../../share/pelab/${ARG_NAME})
    endif()
    foreach(file ${ARG_DATA})
      get_filename_component(base ${file} NAME)
      configure_file(${file} ${data_dir}/${base} COPYONLY)
    endforeach()
  endif()

  if(PELAB_PLUGIN_INSTALL_DIR)
    install(TARGETS ${target} LIBRARY DESTINATION ${PELAB_PLUGIN_INSTALL_DIR})
    if(ARG_DATA)
      install(FILES ${ARG_DATA} DESTINATION ${PELAB_DATA_INSTALL_DIR}/${ARG_NAME})
    endif()
  endif()
endfunction()
