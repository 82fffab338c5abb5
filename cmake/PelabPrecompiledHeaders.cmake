# LibTorch's headers dominate compile time. Two precompiled headers are built once and reused:
# one for the core, apps, tests and benchmarks (default visibility), one for plugins (hidden
# visibility: a PCH is only valid with the flags it was built with).
set(PELAB_PCH_HEADERS <torch/torch.h> <fmt/format.h> <string> <vector> <map> <memory>)

function(_pelab_make_pch target visibility)
  file(WRITE ${CMAKE_BINARY_DIR}/${target}.cpp "// precompiled-header carrier\n")
  add_library(${target} OBJECT ${CMAKE_BINARY_DIR}/${target}.cpp)
  target_link_libraries(${target} PRIVATE torch fmt::fmt)
  target_precompile_headers(${target} PRIVATE ${PELAB_PCH_HEADERS})
  set_target_properties(${target} PROPERTIES CXX_VISIBILITY_PRESET ${visibility}
                                             VISIBILITY_INLINES_HIDDEN ON)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # Without its build time inside, a Clang PCH can be cached by ccache.
    target_compile_options(${target} PRIVATE -Xclang -fno-pch-timestamp)
  endif()
endfunction()

if(PELAB_USE_PCH)
  _pelab_make_pch(pelab_pch_default default)
  _pelab_make_pch(pelab_pch_plugin hidden)
endif()

# pelab_use_pch(<target> default|plugin)
function(pelab_use_pch target flavour)
  if(PELAB_USE_PCH AND TARGET pelab_pch_${flavour})
    target_precompile_headers(${target} REUSE_FROM pelab_pch_${flavour})
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "EXECUTABLE")
      # Executables would get -fPIE, which invalidates the -fPIC header; -fPIC code links into a
      # PIE executable just as well.
      set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
      target_compile_options(${target} PRIVATE -fPIC)
    endif()
  endif()
endfunction()
