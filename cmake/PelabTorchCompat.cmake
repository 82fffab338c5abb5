# pelab builds against two LibTorches: Debian 12's libtorch-dev (1.13) and the LibTorch inside a
# current PyTorch wheel (docs/building.md). The wheel ships headers of libraries pelab takes from
# Debian, fmt among them (fmt 12 against Debian's fmt 9, whose headers spdlog and the libfmt that
# pelab links were built with). Both cannot be on the include path: whichever comes first wins
# and the other's compiled code no longer matches. So pelab sees the wheel's include folder
# through an overlay that holds every entry but those, and LibTorch's targets are pointed at it.
# Debian's LibTorch installs into /usr/include beside Debian's fmt, and is left as it is.

# Entries of the wheel's include folder that Debian provides to pelab instead.
set(PELAB_TORCH_SHADOWED_HEADERS fmt)

function(pelab_hide_bundled_headers)
  if(NOT TORCH_INSTALL_PREFIX OR NOT EXISTS "${TORCH_INSTALL_PREFIX}/include/fmt")
    return()  # no bundled copy: Debian's LibTorch, or one built without it
  endif()
  set(original "${TORCH_INSTALL_PREFIX}/include")
  set(overlay "${CMAKE_BINARY_DIR}/torch-include")
  file(MAKE_DIRECTORY "${overlay}")
  file(GLOB entries RELATIVE "${original}" "${original}/*")
  foreach(entry IN LISTS entries)
    if(NOT entry IN_LIST PELAB_TORCH_SHADOWED_HEADERS AND NOT EXISTS "${overlay}/${entry}")
      file(CREATE_LINK "${original}/${entry}" "${overlay}/${entry}" SYMBOLIC)
    endif()
  endforeach()
  foreach(target IN ITEMS torch torch_cpu torch_cuda c10 c10_cuda torch_library)
    if(NOT TARGET ${target})
      continue()
    endif()
    get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
    if(dirs)
      string(REPLACE "${original}" "${overlay}" dirs "${dirs}")
      set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${dirs}")
    endif()
  endforeach()
  # The wheel's CUDA libraries find the NVIDIA wheels beside it through their RUNPATH
  # ($ORIGIN/../../nvidia/*/lib), which the linker does not follow: without these it resolves
  # them against the CUDA toolkit's older copies (e.g. NCCL) and fails.
  file(GLOB nvidia_libraries "${TORCH_INSTALL_PREFIX}/../nvidia/*/lib")
  foreach(folder IN LISTS nvidia_libraries)
    add_link_options("LINKER:-rpath-link,${folder}")
  endforeach()
  string(REPLACE "${original}" "${overlay}" TORCH_INCLUDE_DIRS "${TORCH_INCLUDE_DIRS}")
  set(TORCH_INCLUDE_DIRS "${TORCH_INCLUDE_DIRS}" PARENT_SCOPE)
  # Installed programs and plugins find the wheel's libraries where they are (outside the system's
  # folders, so not found otherwise): their folders join the install RUNPATH. The wheel's own
  # folder is named explicitly, since CMake leaves out of the link-path RUNPATH every folder inside
  # the build tree, where `make build-current-torch` keeps its virtual environment.
  set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON PARENT_SCOPE)
  set(PELAB_TORCH_RUNTIME_DIRS "${TORCH_INSTALL_PREFIX}/lib" PARENT_SCOPE)
  message(STATUS "pelab: LibTorch's headers through ${overlay}, without its bundled "
                 "${PELAB_TORCH_SHADOWED_HEADERS} (Debian's are used)")
endfunction()

pelab_hide_bundled_headers()
