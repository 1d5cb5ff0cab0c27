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

# In a sanitizer tree every executable (gk, the tests, the benchmarks, and
# the programs tests/ops builds against the installed libgk) gets
# ci/sanitizers/keep_loaded.c: it keeps the third-party libraries named in
# GK_SANITIZE_KEEP loaded until exit, so that LeakSanitizer can name what
# they leave behind (the file says why). Programs built outside this tree
# link it with GK_SANITIZE_LINK (a flag for their compiler driver).
if(GK_SANITIZE)
  add_library(gk_sanitize_keep OBJECT ${PROJECT_SOURCE_DIR}/ci/sanitizers/keep_loaded.c)
  set(GK_SANITIZE_LINK "-Wl,$<TARGET_OBJECTS:gk_sanitize_keep>")
endif()

# Links gk_sanitize_keep into every executable target; called once they all
# exist (the end of the top-level CMakeLists.txt).
function(gk_sanitize_keep_loaded)
  if(NOT GK_SANITIZE)
    return()
  endif()
  set(dirs ${PROJECT_SOURCE_DIR})
  while(dirs)
    list(POP_FRONT dirs d)
    get_property(sub DIRECTORY ${d} PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${sub})
    get_property(targets DIRECTORY ${d} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(t ${targets})
      get_target_property(type ${t} TYPE)
      if(type STREQUAL "EXECUTABLE")
        target_link_libraries(${t} PRIVATE gk_sanitize_keep ${CMAKE_DL_LIBS})
      endif()
    endforeach()
  endwhile()
endfunction()
