# port.cmake - which platform interfaces this system has, found by feature
# checks rather than by the OS name, so that every fallback can be built and
# tested on Linux too: GK_PORTABLE_ONLY=ON turns the Linux-only paths off
# (memfd_create, pipe2, the GNU strerror_r), and the whole suite then runs on
# the POSIX fallbacks that macOS uses.
#
# Each result becomes a compile definition GK_HAVE_<X>=0|1 for every target
# (tests included: a test of the loader may need to know which path loaded an
# image).
include(CheckSymbolExists)
include(CheckStructHasMember)
include(CheckCSourceCompiles)

option(GK_PORTABLE_ONLY
  "Use only the portable POSIX paths (what macOS builds use), also on Linux" OFF)

# Darwin hides its extensions (dladdr, st_mtimespec, ...) once a file asks
# for _POSIX_C_SOURCE, as some of ours do for strnlen; _DARWIN_C_SOURCE is
# its counterpart of the _GNU_SOURCE the top-level file sets.
if(APPLE)
  add_compile_definitions(_DARWIN_C_SOURCE)
  set(CMAKE_REQUIRED_DEFINITIONS -D_DARWIN_C_SOURCE)
else()
  set(CMAKE_REQUIRED_DEFINITIONS -D_GNU_SOURCE)
endif()

# gk_port_define(NAME HAVE): HAVE is the check's outcome, forced to 0 by
# GK_PORTABLE_ONLY; it is reported and defined as GK_HAVE_<NAME>.
function(gk_port_define name have)
  if(GK_PORTABLE_ONLY OR NOT have)
    set(v 0)
  else()
    set(v 1)
  endif()
  add_compile_definitions(GK_HAVE_${name}=${v})
  set(GK_HAVE_${name} ${v} PARENT_SCOPE)
endfunction()

# memfd_create: CPU images load from memory (loader/cpu.c); without it,
# from an unlinked temporary file.
check_symbol_exists(memfd_create "sys/mman.h" GK_CHECK_MEMFD_CREATE)
gk_port_define(MEMFD_CREATE "${GK_CHECK_MEMFD_CREATE}")
# pipe2: close-on-exec pipes made atomically (recipes/engine/spawn.c);
# without it, pipe + fcntl(FD_CLOEXEC).
check_symbol_exists(pipe2 "unistd.h" GK_CHECK_PIPE2)
gk_port_define(PIPE2 "${GK_CHECK_PIPE2}")
# Which strerror_r: GNU's returns the text (char *), POSIX's an int.
# (loader/status.c asks for the POSIX one when this is 0.)
check_c_source_compiles("
#include <string.h>
int main(void) {
  char b[64];
  _Static_assert(_Generic(strerror_r(0, b, sizeof b), char *: 1, default: 0), \"GNU\");
  return 0;
}" GK_CHECK_GNU_STRERROR_R)
gk_port_define(GNU_STRERROR_R "${GK_CHECK_GNU_STRERROR_R}")

# File times with nanoseconds: POSIX 2008 calls them st_mtim, Darwin
# st_mtimespec. Code uses the POSIX names; on Darwin they are mapped.
check_struct_has_member("struct stat" st_mtim "sys/stat.h" GK_CHECK_ST_MTIM LANGUAGE C)
if(NOT GK_CHECK_ST_MTIM)
  check_struct_has_member("struct stat" st_mtimespec "sys/stat.h" GK_CHECK_ST_MTIMESPEC LANGUAGE C)
  if(GK_CHECK_ST_MTIMESPEC)
    add_compile_definitions(st_mtim=st_mtimespec st_ctim=st_ctimespec)
  else()
    message(FATAL_ERROR "struct stat has neither st_mtim nor st_mtimespec: "
      "gk's cache needs file times with nanoseconds")
  endif()
endif()
unset(CMAKE_REQUIRED_DEFINITIONS)

set(gk_port_note "")
if(GK_PORTABLE_ONLY)
  set(gk_port_note " (GK_PORTABLE_ONLY)")
endif()
message(STATUS "gk platform paths: memfd_create=${GK_HAVE_MEMFD_CREATE} "
  "pipe2=${GK_HAVE_PIPE2} GNU strerror_r=${GK_HAVE_GNU_STRERROR_R}${gk_port_note}")
