# Fails when a public function of the header is missing from the API doc, or when a heading of
# the doc names a tile_* identifier the header no longer has.
#
#   cmake -DHEADER=include/fusedops.h -DDOC=docs/api.md -P check_api_docs.cmake
#
# The header's functions are its declarations that start a line with TILE_API (the #define of
# TILE_API itself does not); each names its function on that line. A function is documented
# when a Markdown heading of the doc names it (docs/api.md gives every function, or a group of
# related ones, a "### `tile_...`" section).
cmake_minimum_required(VERSION 3.22)

foreach(v HEADER DOC)
  if(NOT DEFINED ${v} OR NOT EXISTS "${${v}}")
    message(FATAL_ERROR "check_api_docs: -D${v}=<file> is missing or does not exist")
  endif()
endforeach()

file(READ "${HEADER}" header)
file(READ "${DOC}" doc)

# "\n" first so that a match on the first line is found as well.
string(REGEX MATCHALL "\n[ \t]*TILE_API[ \t][^(\n;]*\\(" decls "\n${header}")
set(functions)
foreach(decl IN LISTS decls)
  if(NOT decl MATCHES "(tile_[A-Za-z0-9_]+)[ \t]*\\($")
    string(STRIP "${decl}" decl)
    message(FATAL_ERROR "${HEADER}: no tile_* function name on the TILE_API line: ${decl}")
  endif()
  list(APPEND functions ${CMAKE_MATCH_1})
endforeach()
list(LENGTH functions n_functions)
if(n_functions EQUAL 0)
  message(FATAL_ERROR "${HEADER}: found no TILE_API function declarations")
endif()

string(REGEX MATCHALL "\n#+[ \t][^\n]*" headings "\n${doc}")
set(documented)
foreach(h IN LISTS headings)
  string(REGEX MATCHALL "tile_[A-Za-z0-9_]+" names "${h}")
  list(APPEND documented ${names})
endforeach()
list(REMOVE_DUPLICATES documented)

set(missing)
foreach(f IN LISTS functions)
  if(NOT f IN_LIST documented)
    list(APPEND missing ${f})
    message(SEND_ERROR "${f} is declared in ${HEADER} but no heading of ${DOC} names it "
                       "(add a \"### `${f}`\" section with its prototype, parameters and statuses)")
  endif()
endforeach()

set(stale)
foreach(name IN LISTS documented)
  if(NOT "\n${header}\n" MATCHES "[^A-Za-z0-9_]${name}[^A-Za-z0-9_]")
    list(APPEND stale ${name})
    message(SEND_ERROR "${DOC} has a heading for ${name}, which ${HEADER} does not declare")
  endif()
endforeach()

if(missing OR stale)
  message(FATAL_ERROR "${DOC} is out of step with ${HEADER}")
endif()
message(STATUS "${DOC} documents all ${n_functions} tile_* functions of ${HEADER}: ${functions}")
