# bcgenConfig.cmake - the bcgen package for CMake, installed by
# `make install PREFIX=...` into PREFIX/lib/cmake/bcgen/.
#
#   find_package(bcgen CONFIG REQUIRED)      # CMAKE_PREFIX_PATH=PREFIX, or bcgen_DIR
#
#   target_link_libraries(app PRIVATE bcgen::bcgen)   # the JIT: <bcgen.h>, libbcgen.so
#   target_link_libraries(app PRIVATE bcgen::static)  # the same, libbcgen.a (+ -ldl -lm -lpthread)
#
#   bcgen_generate(TARGET firmware SPEC kernels.bcg [NAME kernels] [OUTPUT_DIR dir]
#                  [MISRA_REPORT])
#       runs `bcgen aot --spec kernels.bcg` at build time into the build tree
#       (default ${CMAKE_CURRENT_BINARY_DIR}/bcgen/NAME.c and NAME.h, NAME
#       the spec's name without its extension), again whenever the spec or
#       the bcgen program changes, adds the .c to TARGET's sources and the
#       directory to its include path.  The pair is byte-identical for the
#       same spec on any machine, and needs nothing of bcgen to build: cross
#       builds (a toolchain file for arm-none-eabi) compile it like any
#       source; only the generator runs on the build machine.  MISRA_REPORT
#       also writes NAME.misra.md beside them, the pair's MISRA C:2012
#       deviation record (bcgen aot --misra-report).
#
#   bcgen_EXECUTABLE    the generator (imported target bcgen::cli); set it
#                       before find_package to use another bcgen
#   bcgen_VERSION       from bcgenConfigVersion.cmake
#
# The paths are relative to this file, so the installed tree can be moved.
cmake_minimum_required(VERSION 3.13)

get_filename_component(_bcgen_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

if(NOT bcgen_EXECUTABLE)
  set(bcgen_EXECUTABLE "${_bcgen_prefix}/bin/bcgen")
endif()
if(NOT EXISTS "${bcgen_EXECUTABLE}")
  set(bcgen_FOUND FALSE)
  set(bcgen_NOT_FOUND_MESSAGE "bcgen: the generator ${bcgen_EXECUTABLE} does not exist")
  return()
endif()

if(NOT TARGET bcgen::cli)
  add_executable(bcgen::cli IMPORTED)
  set_target_properties(bcgen::cli PROPERTIES IMPORTED_LOCATION "${bcgen_EXECUTABLE}")
endif()

# The JIT library is a host library: a cross build (arm-none-eabi) only
# runs the generator and never links it.
if(NOT TARGET bcgen::bcgen AND EXISTS "${_bcgen_prefix}/lib/libbcgen.so.0")
  add_library(bcgen::bcgen SHARED IMPORTED)
  set_target_properties(bcgen::bcgen PROPERTIES
    IMPORTED_LOCATION "${_bcgen_prefix}/lib/libbcgen.so.0"
    IMPORTED_SONAME "libbcgen.so.0"
    INTERFACE_INCLUDE_DIRECTORIES "${_bcgen_prefix}/include")
endif()
if(NOT TARGET bcgen::static AND EXISTS "${_bcgen_prefix}/lib/libbcgen.a")
  add_library(bcgen::static STATIC IMPORTED)
  set_target_properties(bcgen::static PROPERTIES
    IMPORTED_LOCATION "${_bcgen_prefix}/lib/libbcgen.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_bcgen_prefix}/include"
    INTERFACE_LINK_LIBRARIES "dl;m;pthread")
endif()

function(bcgen_generate)
  cmake_parse_arguments(_bg "MISRA_REPORT" "TARGET;SPEC;NAME;OUTPUT_DIR" "" ${ARGN})
  if(_bg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "bcgen_generate: unknown arguments ${_bg_UNPARSED_ARGUMENTS} "
                        "(TARGET t SPEC file.bcg [NAME n] [OUTPUT_DIR d] [MISRA_REPORT])")
  endif()
  if(NOT _bg_TARGET OR NOT TARGET "${_bg_TARGET}")
    message(FATAL_ERROR "bcgen_generate: TARGET '${_bg_TARGET}' is not a target of this project")
  endif()
  if(NOT _bg_SPEC)
    message(FATAL_ERROR "bcgen_generate: SPEC is required (a spec file, docs/spec.md)")
  endif()
  get_filename_component(_spec "${_bg_SPEC}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${_spec}")
    message(FATAL_ERROR "bcgen_generate: the spec ${_spec} does not exist")
  endif()
  if(NOT _bg_NAME)
    get_filename_component(_bg_NAME "${_spec}" NAME_WE)
  endif()
  if(NOT _bg_OUTPUT_DIR)
    set(_bg_OUTPUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/bcgen")
  endif()
  set(_c "${_bg_OUTPUT_DIR}/${_bg_NAME}.c")
  set(_h "${_bg_OUTPUT_DIR}/${_bg_NAME}.h")
  set(_outputs "${_c}" "${_h}")
  set(_report)
  if(_bg_MISRA_REPORT)
    list(APPEND _outputs "${_bg_OUTPUT_DIR}/${_bg_NAME}.misra.md")
    set(_report --misra-report "${_bg_OUTPUT_DIR}/${_bg_NAME}.misra.md")
  endif()
  add_custom_command(
    OUTPUT ${_outputs}
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${_bg_OUTPUT_DIR}"
    COMMAND bcgen::cli aot --spec "${_spec}" -o "${_c}" ${_report}
    DEPENDS "${_spec}" "${bcgen_EXECUTABLE}"
    COMMENT "bcgen: ${_bg_NAME}.c and ${_bg_NAME}.h from ${_bg_SPEC}"
    VERBATIM)
  target_sources("${_bg_TARGET}" PRIVATE "${_c}" "${_h}")
  target_include_directories("${_bg_TARGET}" PRIVATE "${_bg_OUTPUT_DIR}")
endfunction()

unset(_bcgen_prefix)
set(bcgen_FOUND TRUE)
