# The `layering` test: `cmake -DSOURCE_DIR=<repo> -P check_layering.cmake`.
#
# 1. The core's concern folders form layers (docs/architecture.md draws them): a header or source
#    of one folder includes only headers of its own folder and of lower layers. Folders of one
#    layer are independent of each other. Any other include is a cycle in the making, and fails.
# 2. pelab's own plugins and tasks include the SDK, `pelab/sdk.h`, and no other pelab header: what
#    they need is what a third party's plugin can have.

# Lower layers first; the folders of one layer joined by commas.
set(layers
  "base"
  "io,host"
  "interfaces"
  "plugins"
  "config"
  "model"
  "training"
  "runs")

set(rank 0)
foreach(layer IN LISTS layers)
  string(REPLACE "," ";" folders "${layer}")
  foreach(folder IN LISTS folders)
    set(rank_of_${folder} ${rank})
  endforeach()
  math(EXPR rank "${rank} + 1")
endforeach()

set(violations "")

file(GLOB_RECURSE core_files
  ${SOURCE_DIR}/core/include/pelab/*.h ${SOURCE_DIR}/core/src/*.h ${SOURCE_DIR}/core/src/*.cpp)
foreach(file IN LISTS core_files)
  file(RELATIVE_PATH relative ${SOURCE_DIR} ${file})
  if(relative MATCHES "^core/include/pelab/([a-z_]+)/")
    set(folder ${CMAKE_MATCH_1})
  elseif(relative MATCHES "^core/src/([a-z_]+)/")
    set(folder ${CMAKE_MATCH_1})
  else()
    continue()  # pelab/sdk.h gathers the SDK's headers: it is above every layer
  endif()
  if(NOT DEFINED rank_of_${folder})
    list(APPEND violations
         "${relative}: the folder '${folder}' is in no layer; add it to cmake/check_layering.cmake and docs/architecture.md")
    continue()
  endif()
  file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]+[<\"]pelab/")
  foreach(line IN LISTS includes)
    if(NOT line MATCHES "pelab/([a-z_]+)/")
      list(APPEND violations "${relative}: ${line}: only pelab/sdk.h is above the layers")
      continue()
    endif()
    set(target ${CMAKE_MATCH_1})
    if(target STREQUAL folder)
      continue()
    endif()
    if(NOT DEFINED rank_of_${target})
      list(APPEND violations "${relative}: ${line}: '${target}' is in no layer")
    elseif(NOT rank_of_${target} LESS rank_of_${folder})
      list(APPEND violations
           "${relative}: ${line}: ${folder}/ (layer ${rank_of_${folder}}) may include only lower layers, and ${target}/ is layer ${rank_of_${target}}")
    endif()
  endforeach()
endforeach()

file(GLOB_RECURSE plugin_files
  ${SOURCE_DIR}/plugins/*.h ${SOURCE_DIR}/plugins/*.cpp
  ${SOURCE_DIR}/tasks/*.h ${SOURCE_DIR}/tasks/*.cpp)
foreach(file IN LISTS plugin_files)
  file(RELATIVE_PATH relative ${SOURCE_DIR} ${file})
  file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]+[<\"]pelab/")
  foreach(line IN LISTS includes)
    if(NOT line MATCHES "pelab/sdk\\.h")
      list(APPEND violations
           "${relative}: ${line}: plugins and tasks include pelab/sdk.h alone (what it lacks, add to the SDK)")
    endif()
  endforeach()
endforeach()

list(LENGTH core_files core_count)
list(LENGTH plugin_files plugin_count)
if(violations)
  list(LENGTH violations count)
  string(REPLACE ";" "\n  " text "${violations}")
  message(FATAL_ERROR "${count} include(s) break pelab's layering:\n  ${text}")
endif()
message(STATUS "layering: ${core_count} core files within their layers; ${plugin_count} plugin and task files on the SDK alone")
