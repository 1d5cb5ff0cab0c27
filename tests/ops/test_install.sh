#!/bin/bash
# The installed package: `cmake --install` into a fresh prefix, then the
# example project (examples/embed_qmatmul) built against it through CMake
# (find_package, gk::gk / gk::gk_static, gk_embed_archive, C and .incbin) and
# through pkg-config (shared and static), each run and its result checked.
# The prefix is then moved: both the CMake package and gk.pc still work.
. "$(dirname "$0")/lib.sh"
EX="$SRC/examples/embed_qmatmul"
P="$T/prefix"

"$CMAKE" --install "$BUILD" --prefix "$P" >"$T/install.log" 2>&1 ||
  { cat "$T/install.log" >&2; fail "cmake --install failed"; finish; }
pc=$(find "$P" -name gk.pc)
[ -n "$pc" ] || { fail "no gk.pc installed"; finish; }
libdir=$(dirname "$(dirname "$pc")")
for f in include/gk.h include/gk_kernels.h include/gk_vulkan.h bin/gk; do [ -f "$P/$f" ] || fail "not installed: $f"; done
for f in libgk.a libgk.so libgk.so.0 cmake/gllm_kernels/gllm_kernelsConfig.cmake \
    cmake/gllm_kernels/gllm_kernelsConfigVersion.cmake cmake/gllm_kernels/gllm_kernelsTargets.cmake \
    cmake/gllm_kernels/gllm_kernelsStaticTargets.cmake cmake/gllm_kernels/gk_embed_archive.cmake; do
  [ -e "$libdir/$f" ] || fail "not installed: ${libdir#$P/}/$f"
done
[ -e "$P/include/gk_internal.h" ] && fail "the internal header was installed"
grep -rqs "$BUILD\|$SRC" "$libdir/cmake" "$pc" && fail "the package refers to the build or source tree"
run "$P/bin/gk" --version; expect_status 0 "installed gk runs"
expect_out "gk 0.1" "installed gk --version"

# pkg-config: flags point into the prefix; the static deps are private.
export PKG_CONFIG_PATH="$(dirname "$pc")"
[ "$(realpath "$(pkg-config --variable=includedir gk)")" = "$(realpath "$P/include")" ] ||
  fail "gk.pc includedir is not PREFIX/include: $(pkg-config --variable=includedir gk)"
libs=$(pkg-config --libs gk) slibs=$(pkg-config --static --libs gk)
case "$libs" in *-lsqlite3*) fail "gk.pc puts the static deps in Libs: $libs" ;; esac
for l in -lgk -lsqlite3 -lzstd -lsodium -ljansson -ldl; do
  case " $slibs " in *" $l "*) ;; *) fail "pkg-config --static --libs gk lacks $l: $slibs" ;; esac
done

# check BINARY LABEL: runs it from / (no archive file at hand) and checks
# what it says.
check() {
  (cd / && "$1") >"$T/run.out" 2>&1; st=$?
  [ $st -eq 0 ] || { cat "$T/run.out" >&2; fail "$2: exit $st"; return; }
  grep -q "^qmatmul bits=4: cpu x86-64[-v0-9]* image on cpu:x86-64[-v0-9]*, from $(stat -c %s "$ARCHIVE") embedded bytes: 3x8 results, max |error| 0: match$" "$T/run.out" ||
    { cat "$T/run.out" >&2; fail "$2: unexpected output"; }
}
needs_libgk() { readelf -d "$1" | grep -q 'NEEDED.*libgk\.so'; }

# CMake: find_package + gk_embed_archive, three ways.
cmake_example() { # NAME PREFIX ARGS...
  name=$1 prefix=$2; shift 2
  "$CMAKE" -S "$EX" -B "$T/cm-$name" -G "$GENERATOR" -DCMAKE_PREFIX_PATH="$prefix" \
    -DGK_ARCHIVE="$ARCHIVE" -DCMAKE_C_FLAGS="$SAN_FLAGS" "$@" >"$T/cm-$name.log" 2>&1 &&
    "$CMAKE" --build "$T/cm-$name" >>"$T/cm-$name.log" 2>&1 ||
    { cat "$T/cm-$name.log" >&2; fail "CMake build '$name' failed"; return 1; }
}
if cmake_example shared "$P"; then
  check "$T/cm-shared/embed_qmatmul" "CMake, gk::gk"
  needs_libgk "$T/cm-shared/embed_qmatmul" || fail "gk::gk did not link libgk.so"
  ldd "$T/cm-shared/embed_qmatmul" | grep -q "libgk.so.0 => $libdir/libgk.so.0" ||
    fail "the program does not load the installed libgk.so: $(ldd "$T/cm-shared/embed_qmatmul" | grep libgk)"
  grep -q "kernels_gkfat" "$T/cm-shared/gk_embed/embed_qmatmul/kernels_gkfat.c" ||
    fail "gk_embed_archive did not write kernels_gkfat.c"
fi
if cmake_example static "$P" -DEMBED_STATIC=ON; then
  check "$T/cm-static/embed_qmatmul" "CMake, gk::gk_static"
  needs_libgk "$T/cm-static/embed_qmatmul" && fail "gk::gk_static linked libgk.so"
fi
if cmake_example asm "$P" -DEMBED_ASM=ON; then
  check "$T/cm-asm/embed_qmatmul" "CMake, gk_embed_archive ASM"
  [ -f "$T/cm-asm/gk_embed/embed_qmatmul/kernels_gkfat.S" ] || fail "ASM did not write a .S"
fi
# The archive changes: the build embeds it again.
if [ -d "$T/cm-shared" ]; then
  cp "$ARCHIVE" "$T/other.gkfat"
  "$CMAKE" -S "$EX" -B "$T/cm-shared" -DGK_ARCHIVE="$T/other.gkfat" >/dev/null 2>&1
  "$CMAKE" --build "$T/cm-shared" >/dev/null 2>&1 || fail "rebuild with another archive"
  touch "$T/other.gkfat"
  "$CMAKE" --build "$T/cm-shared" -v 2>&1 | grep -q "gk embed" || fail "a newer archive was not embedded again"
fi
# A required component that is not there is reported by find_package.
"$CMAKE" -S "$EX" -B "$T/cm-bad" -DCMAKE_PREFIX_PATH="$P" -DGK_ARCHIVE="$ARCHIVE" \
  -Dgllm_kernels_DIR="$libdir/cmake/gllm_kernels" -DEMBED_STATIC=ON \
  -DPKG_CONFIG_EXECUTABLE=/nonexistent/pkg-config >"$T/cm-bad.log" 2>&1 &&
  fail "find_package(COMPONENTS static) succeeded without pkg-config"
grep -q "gk::gk_static is not available" "$T/cm-bad.log" || { cat "$T/cm-bad.log" >&2; fail "the missing component is not explained"; }

# pkg-config + make, shared and static, from a copy of the example.
command -v make >/dev/null || skip "make is not installed (the CMake builds passed)"
for link in shared static; do
  cp -r "$EX" "$T/mk-$link"
  # Sanitizer flags through the environment: the Makefile appends to them.
  if CFLAGS="-O2 $SAN_FLAGS" LDFLAGS="$SAN_FLAGS" \
      make -C "$T/mk-$link" LINK=$link ARCHIVE="$ARCHIVE" GK="$P/bin/gk" >"$T/mk-$link.log" 2>&1; then
    check "$T/mk-$link/embed_qmatmul" "pkg-config, $link"
  else
    cat "$T/mk-$link.log" >&2; fail "make LINK=$link failed"
  fi
done
[ -x "$T/mk-shared/embed_qmatmul" ] && { needs_libgk "$T/mk-shared/embed_qmatmul" || fail "make LINK=shared did not link libgk.so"; }
[ -x "$T/mk-static/embed_qmatmul" ] && needs_libgk "$T/mk-static/embed_qmatmul" && fail "make LINK=static linked libgk.so"

# Relocated: the package finds itself from where it is now.
mv "$P" "$T/moved"
export PKG_CONFIG_PATH="${PKG_CONFIG_PATH/$P/$T/moved}"
[ "$(realpath "$(pkg-config --variable=libdir gk)")" = "$(realpath "${libdir/$P/$T/moved}")" ] ||
  fail "gk.pc does not follow a moved prefix: $(pkg-config --variable=libdir gk)"
if cmake_example moved "$T/moved"; then
  check "$T/cm-moved/embed_qmatmul" "CMake, moved prefix"
fi
finish
