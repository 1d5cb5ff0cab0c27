#!/bin/bash
# Direct mode's fast path (cache/gkcache.h, gkc_index_open): a no-op build
# answers from the build index and the files' stamps, and still notices
# every change that matters - an edited source or header with the same size
# and the same mtime (to the nanosecond), a header replaced by a rename, a
# changed compiler binary of the same size and mtime, changed flags, an
# output image altered in place - while a damaged or missing index only
# makes a build slower.
. "$(dirname "$0")/lib.sh"

# The index is what is tested here: the fast path that answers a no-op
# build before it (engine/fast.c) is tested in test_fast.sh.
export GK_BUILD_FAST=0
P=$T/p
make_project "$P"
C=$T/cache
build() { run "$GK" build --recipes "$P/recipes" --out "$T/out" --cache "$C" --json "$@"; }
# compiled N DESCRIPTION: the --json summary says N jobs were compiled.
compiled() {
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["compiled"] == int(sys.argv[2]) else 1)' \
    "$T/stdout" "$1" || { fail "$2: expected $1 compiled: $(cat "$T/stdout")"; cat "$T/stderr" >&2; }
}
written() {
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["written"] == int(sys.argv[2]) else 1)' \
    "$T/stdout" "$1" || fail "$2: expected $1 images written: $(cat "$T/stdout")"
}
# same_size_edit FILE NEW_CONTENT: rewrites FILE in place with content of
# the same size and puts its mtime back exactly (touch -r keeps the ns).
same_size_edit() {
  touch -r "$1" "$T/ref"
  [ "$(printf '%s\n' "$2" | wc -c)" -eq "$(wc -c <"$1")" ] || { fail "test bug: '$2' is not the size of $1"; return; }
  printf '%s\n' "$2" >"$1"
  touch -r "$T/ref" "$1"
}

# The compiler is a wrapper that reports its own version: replacing it
# with another of the same size and mtime must change the identity.
wrap_cc "$T/bin"
export PATH="$T/bin:$PATH"

# Stamps are trusted only for files unchanged for 2 s when read: let every
# input settle (ctime cannot be set back, so this waits).
touch -d '-1 minute' "$P"/src/*.c "$P"/src/inc/h.h "$P"/recipes/*.lua "$T/bin/cc"
sleep 3

build
expect_status 0 "first build"
compiled 5 "first build"
grep -q '"toolchain": "cc 90.1.0 ' "$T/out/manifest.json" || fail "the wrapper's version is not the identity"
index=$(find "$C/v1/index" -name '*.json' 2>/dev/null)
[ "$(echo "$index" | grep -c .)" -eq 1 ] || fail "expected one build index, found: $index"

# The images were just written: their stamps are trusted after they settle.
sleep 3
build
compiled 0 "second build"
written 0 "second build"
build
compiled 0 "third build"
cp "$index" "$T/index.1"
touch -d '-1 minute' "$index"; touch "$T/marker"

# A no-op build answers from the index alone: the records are not needed
# (moved away), and the index is not rewritten when nothing changed.
mv "$C/v1/keys" "$C/v1/keys.away"
build
expect_status 0 "no-op build without records"
compiled 0 "no-op build answers from the index"
written 0 "no-op build from the index"
mv "$C/v1/keys.away" "$C/v1/keys"
cmp -s "$index" "$T/index.1" || fail "a no-op build rewrote the index"
[ -z "$(find "$index" -newer "$T/marker")" ] || fail "a no-op build touched the index"

# A header edited in place: same size, same mtime to the ns; only its
# ctime moved. The four jobs of k recompile, o does not.
same_size_edit "$P/src/inc/h.h" '#define SCALE 7'
build
compiled 4 "header edited with the same size and mtime"
grep -q . "$T/out/cpu/k/x86-64.bits1.so" || fail "k's image missing"

# The source itself, the same way: the four jobs of k.
cp "$P/src/k.c" "$T/k.c.orig"
same_size_edit "$P/src/k.c" "$(sed 's/x \* SCALE/SCALE * x/' "$T/k.c.orig")"
build
compiled 4 "source edited with the same size and mtime"

# A header replaced by a rename (new inode), same size and mtime, other
# content: recompiled; then the same content back through a rename: all
# four from the cache (content decides, not the stamp).
cp -p "$P/src/inc/h.h" "$T/h.old"
printf '#define SCALE 8\n' >"$T/h.new"; touch -r "$P/src/inc/h.h" "$T/h.new"
mv "$T/h.new" "$P/src/inc/h.h"
build
compiled 4 "header renamed over with other content"
cp -p "$T/h.old" "$T/h.back"; mv "$T/h.back" "$P/src/inc/h.h"
build
compiled 0 "header renamed back to content built before"

# A changed compiler binary, same size and mtime: a new identity, so every
# job compiles again.
sed -i.bak 's/90\.1\.0/90.2.0/' "$T/bin/cc"
touch -r "$T/bin/cc.bak" "$T/bin/cc"
build
compiled 5 "compiler replaced with the same size and mtime"
grep -q '"toolchain": "cc 90.2.0 ' "$T/out/manifest.json" || fail "the new compiler's version is not in the manifest"

# Changed flags in a recipe: that kernel's job compiles again.
sed -i 's/targets = { "x86-64" } }/targets = { "x86-64" }, flags = { "-DEXTRA=1" } }/' "$P/recipes/o.lua"
grep -q EXTRA "$P/recipes/o.lua" || fail "test bug: o.lua was not edited"
build
compiled 1 "recipe flags changed"

# An output image altered in place with the same size and mtime: rewritten
# from the cache. (Its stamp was recorded once it had settled.)
sleep 3
build
compiled 0 "settling build"
img=$T/out/cpu/o/x86-64.so
good=$(sha256sum <"$img")
touch -r "$img" "$T/ref"
printf 'XXXX' | dd of="$img" bs=1 seek=100 conv=notrunc status=none
touch -r "$T/ref" "$img"
build
compiled 0 "altered image"
written 1 "altered image is rewritten"
[ "$(sha256sum <"$img")" = "$good" ] || fail "the altered image was not restored"

# A damaged index is ignored (and replaced); so is a missing one; and
# GK_BUILD_INDEX=0 builds without it.
echo '{"format": "gk-direct-index", "version": 1, "files": [["x"' >"$index"
build
expect_status 0 "damaged index"
compiled 0 "damaged index"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$index" || fail "the damaged index was not replaced"
rm -rf "$C/v1/index"
build
compiled 0 "missing index"
export GK_BUILD_INDEX=0; build; unset GK_BUILD_INDEX
compiled 0 "GK_BUILD_INDEX=0"
written 0 "GK_BUILD_INDEX=0"

# Nothing temporary is left in the cache (git's status output included).
left=$(find "$C/v1/tmp" -type f)
[ -z "$left" ] || fail "temporary files left: $left"
finish
