# Instrumented builds, each in a build directory of its own (never build/):
#   -DFRUGAL_SANITIZE=ON  ASan+UBSan, for the unit and store tests (scripts/sanitize).
#   -DFRUGAL_FUZZ=ON      the same plus libFuzzer coverage, clang only; adds tests/fuzz
#                         (scripts/fuzz).
# UBSan findings abort instead of printing and going on, so a test or fuzzer fails on them.
option(FRUGAL_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(FRUGAL_FUZZ "Build the libFuzzer targets in tests/fuzz (clang)" OFF)

if(FRUGAL_SANITIZE OR FRUGAL_FUZZ)
  set(FRUGAL_SANITIZER_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer
    -fno-sanitize-recover=undefined)
  add_compile_options(${FRUGAL_SANITIZER_FLAGS})
  add_link_options(${FRUGAL_SANITIZER_FLAGS})
endif()

if(FRUGAL_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "FRUGAL_FUZZ needs clang: -DCMAKE_CXX_COMPILER=clang++")
  endif()
  # Coverage for every library; only the fuzz executables link libFuzzer's main.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
