# Instrumented builds. Both are whole-tree options, so every library and
# test in the tree carries the same instrumentation.
#
# GK_SANITIZE: AddressSanitizer + UBSan (gcc or clang). Any report ends the
# process with an error (-fno-sanitize-recover=all): undefined behaviour
# fails a test instead of scrolling past. ci/sanitize.sh builds such a tree
# and runs the whole suite in it.
#
# GK_FUZZ: clang's libFuzzer. Everything is compiled with coverage
# instrumentation (fuzzer-no-link) plus ASan and UBSan, so the fuzzers see
# libgk's and the recipe engine's branches, not just their own; tests/fuzz
# then links fuzz_archive, fuzz_elf and fuzz_recipe with -fsanitize=fuzzer.
# Configure with CC=clang-14 (ci/fuzz.sh does).
option(GK_SANITIZE "Build with AddressSanitizer and UBSan" OFF)
option(GK_FUZZ "Build libFuzzer targets (clang; implies ASan and UBSan)" OFF)

set(GK_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all
                       -fno-omit-frame-pointer)
if(GK_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "GK_FUZZ needs clang (libFuzzer), not ${CMAKE_C_COMPILER_ID}: "
                        "configure with CC=clang-14 (apt-get install clang-14 libclang-rt-14-dev)")
  endif()
  add_compile_options(${GK_SANITIZER_FLAGS} -fsanitize=fuzzer-no-link)
  add_link_options(-fsanitize=address,undefined)
elseif(GK_SANITIZE)
  add_compile_options(${GK_SANITIZER_FLAGS})
  add_link_options(-fsanitize=address,undefined)
endif()
# A fuzz tree is a sanitizer tree for every test and library that asks.
if(GK_FUZZ)
  set(GK_SANITIZE ON)
endif()
