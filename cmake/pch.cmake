# Precompiled headers for the tests (issue 24): GoogleTest, nlohmann/json and the standard
# headers the test files include are parsed once per build, not once per file. One donor target
# compiles the .gch and every test target reuses it (REUSE_FROM). The product's own files do
# without: at -O2 -g their time is code generation (trace/read.cc took 18.7 s with a .gch and
# 18.5 s without), and GCC 12 reports -Wstringop-overflow inside <string> through a .gch, which
# it keeps quiet for a system header read as text.
# ccache reuses a .gch, and the objects built on it, from a fresh clone only when the .gch
# compile itself is a hit (GCC's .gch bytes differ run to run): so the donor's command line
# holds no path of the clone, and a definition that does (QUARRY_SOURCE_DIR) is set on the few
# files that read it, never on a target. The launcher gives ccache the sloppiness its manual
# asks for with PCH (pch_defines, time_macros; the .gch is new when its users compile).
option(QUARRY_PCH "Precompile the heavy third-party and standard headers" ON)

set(QUARRY_PCH_STD <algorithm> <chrono> <cmath> <cstdint> <cstdio> <cstdlib> <cstring> <expected>
    <filesystem> <fstream> <functional> <map> <memory> <mutex> <optional> <regex> <set>
    <sstream> <string> <string_view> <thread> <unordered_map> <utility> <variant> <vector>)

# quarry_pch_donor(<name> LINK <targets...> HEADERS <headers...>): an object library of one empty
# file whose only job is to compile the .gch, with the flags its users get from LINK.
function(quarry_pch_donor name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "LINK;HEADERS")
  add_library(${name} OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch_donor.cc)
  target_link_libraries(${name} PRIVATE ${arg_LINK})
  if(QUARRY_PCH)
    target_precompile_headers(${name} PRIVATE ${arg_HEADERS})
  endif()
endfunction()

# quarry_use_pch(<donor> <dir>): every C++ target defined under <dir> (and its subdirectories)
# compiles with <donor>'s precompiled headers.
function(quarry_use_pch donor dir)
  if(NOT QUARRY_PCH)
    return()
  endif()
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t ${targets})
    get_target_property(type ${t} TYPE)
    if(NOT t STREQUAL donor AND type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|OBJECT_LIBRARY)$")
      target_precompile_headers(${t} REUSE_FROM ${donor})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    quarry_use_pch(${donor} ${sub})
  endforeach()
endfunction()
