# Rewrites abi/libfusedops.abi from a built library with debug info (the abi_baseline target,
# tests/CMakeLists.txt): only the exported interfaces and the types of the public header, no
# locations, and source paths relative to the checkout, so the file does not depend on where
# the tree or the build lives.
#   cmake -DABIDW=abidw -DLIB=build/tests/abi/libfusedops.so -DSOURCE_DIR=. -P abi/update_baseline.cmake
foreach(v ABIDW LIB SOURCE_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "update_baseline.cmake: -D${v}=... is required")
  endif()
endforeach()
get_filename_component(SOURCE_DIR ${SOURCE_DIR} ABSOLUTE)
set(out ${SOURCE_DIR}/abi/libfusedops.abi)
execute_process(
  COMMAND ${ABIDW} --headers-dir ${SOURCE_DIR}/include --drop-private-types
          --exported-interfaces-only --drop-undefined-syms --no-corpus-path --no-comp-dir-path
          --no-show-locs --out-file ${out}.tmp ${LIB}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(REMOVE ${out}.tmp)
  message(FATAL_ERROR "abidw failed (${rc}) on ${LIB}")
endif()
file(READ ${out}.tmp text)
file(REMOVE ${out}.tmp)
string(REPLACE "path='${SOURCE_DIR}/" "path='" text "${text}")
file(WRITE ${out} "${text}")
message(STATUS "wrote ${out}")
