# How tests are registered, and which build runs which (docs/testing.md, "Stages").
#
# Every target under tests/ is left out of `all` (tests/ is added EXCLUDE_FROM_ALL): a build
# compiles a test program only when it registers a test that runs it, through the two functions
# below. Each test says what kind it is; PILOT_TEST_STAGE says which kinds this build runs:
#
#   kind      what it is                                           stages that run it
#   code      runs our code (library, plugin, tool)                asan
#   threads   runs our code on more than one thread (label         asan, tsan
#             "threads"; tests/support/thread_census_check.py holds the
#             label to what the tests really do)
#   release   checks the build as users get it: exports, packages, release
#             soak, benchmarks' smoke, lint
#   fuzz      a libFuzzer target's smoke run (PILOT_BUILD_FUZZERS)  asan, fuzz
#
# An empty stage (a build configured without a preset) runs every kind.
set(PILOT_TEST_STAGE "" CACHE STRING
    "The tests this build compiles and registers: release, asan, tsan, fuzz, or empty for all")
set_property(CACHE PILOT_TEST_STAGE PROPERTY STRINGS "" release asan tsan fuzz)
if(NOT PILOT_TEST_STAGE MATCHES "^(|release|asan|tsan|fuzz)$")
  message(FATAL_ERROR "PILOT_TEST_STAGE=${PILOT_TEST_STAGE}: expected release, asan, tsan or fuzz")
endif()

set(pilot_stages_of_code asan)
set(pilot_stages_of_threads asan tsan)
set(pilot_stages_of_release release)
set(pilot_stages_of_fuzz asan fuzz)

# pilot_stage_runs(<var> KIND...): <var> is TRUE when this build runs tests of one of the kinds.
function(pilot_stage_runs out)
  set(runs FALSE)
  foreach(kind IN LISTS ARGN)
    if(NOT DEFINED pilot_stages_of_${kind})
      message(FATAL_ERROR "unknown test kind '${kind}' (code, threads, release or fuzz)")
    endif()
    if(PILOT_TEST_STAGE STREQUAL "" OR PILOT_TEST_STAGE IN_LIST pilot_stages_of_${kind})
      set(runs TRUE)
    endif()
  endforeach()
  set(${out} ${runs} PARENT_SCOPE)
endfunction()

# What every registered test needs built; `all` depends on it.
add_custom_target(pilot_stage_tests ALL)

# pilot_benchmark(TARGET...): programs that measure, run by hand on the release build
# (docs/performance.md); the release stage builds them.
function(pilot_benchmark)
  pilot_stage_runs(runs release)
  if(runs)
    add_dependencies(pilot_stage_tests ${ARGN})
  endif()
endfunction()

# pilot_gtest(TARGET KIND kind... [LABELS label...] [TIMEOUT s] [RUN_SERIAL])
# Every test of a GoogleTest program, discovered when ctest runs, with all of its labels (and
# "threads" for that kind). gtest_discover_tests (CMake 3.25) keeps only the first of LABELS
# "a;b", so the labels are set by an include file that ctest reads after the discovery.
function(pilot_gtest target)
  cmake_parse_arguments(PARSE_ARGV 1 T "RUN_SERIAL" "TIMEOUT" "KIND;LABELS")
  pilot_stage_runs(runs ${T_KIND})
  if(NOT runs)
    return()
  endif()
  add_dependencies(pilot_stage_tests ${target})
  set(labels ${T_LABELS})
  if("threads" IN_LIST T_KIND)
    list(APPEND labels threads)
  endif()
  set(properties "")
  if(T_TIMEOUT)
    list(APPEND properties TIMEOUT ${T_TIMEOUT})
  endif()
  if(T_RUN_SERIAL)
    list(APPEND properties RUN_SERIAL TRUE)
  endif()
  if(properties)
    gtest_discover_tests(${target} DISCOVERY_MODE PRE_TEST TEST_LIST ${target}_TESTS
                         PROPERTIES ${properties})
  else()
    gtest_discover_tests(${target} DISCOVERY_MODE PRE_TEST TEST_LIST ${target}_TESTS)
  endif()
  if(labels)
    set(include_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_labels.cmake)
    file(WRITE ${include_file}
         "if(${target}_TESTS)\n"
         "  set_tests_properties(\${${target}_TESTS} PROPERTIES LABELS \"${labels}\")\n"
         "endif()\n")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
  endif()
endfunction()

# pilot_test(NAME name KIND kind... [LABELS label...] [NEEDS target...] COMMAND command...
#            [PROPERTIES property value...])
# One ctest test (a script, a command), registered where its kind runs, with the targets it runs
# (NEEDS) built there. PROPERTIES are set_tests_properties's, list values kept whole.
function(pilot_test)
  cmake_parse_arguments(PARSE_ARGV 0 T "" "NAME" "KIND;LABELS;NEEDS;COMMAND;PROPERTIES")
  pilot_stage_runs(runs ${T_KIND})
  if(NOT runs)
    return()
  endif()
  if(T_NEEDS)
    add_dependencies(pilot_stage_tests ${T_NEEDS})
  endif()
  add_test(NAME ${T_NAME} COMMAND ${T_COMMAND})
  set(labels ${T_LABELS})
  if("threads" IN_LIST T_KIND)
    list(APPEND labels threads)
  endif()
  if(labels)
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${labels}")
  endif()
  if(T_PROPERTIES)
    set_tests_properties(${T_NAME} PROPERTIES ${T_PROPERTIES})
  endif()
endfunction()
