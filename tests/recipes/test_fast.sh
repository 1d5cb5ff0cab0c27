#!/bin/bash
# The fast path of a no-op build (recipes/engine/fast.c): a build that
# changed nothing keeps what it looked at, and the next one is answered by
# stat alone - printing exactly what a whole build prints - until anything
# it looked at changes. Each change below is made right after a build the
# fast path answered, and must make the next build miss it and do the work:
# an edit with the same size and mtime, a header renamed over, a replaced
# compiler, a compiler put earlier on PATH, changed flags, a new recipe, an
# altered or deleted output, an object gone from the cache, another PATH, a
# changed git checkout. GK_BUILD_TRACE says whether it hit.
. "$(dirname "$0")/lib.sh"

P=$T/p
make_project "$P"
C=$T/cache
export GK_BUILD_TRACE=1
build() { run "$GK" build --recipes "$P/recipes" --out "$T/out" --cache "$C" --json "$@"; }
json_is() { # json_is FIELD N DESCRIPTION
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d[sys.argv[2]] == int(sys.argv[3]) else 1)' \
    "$T/stdout" "$1" "$2" || { fail "$3: expected $1 $2: $(cat "$T/stdout")"; cat "$T/stderr" >&2; }
}
hit() { grep -q 'trace: fast path hit' "$T/stderr" || { fail "$1: the fast path did not answer"; cat "$T/stderr" >&2; }; }
missed() {
  ! grep -q 'trace: fast path hit' "$T/stderr" || fail "$1: the fast path answered a build that had work to do"
}
# settle: files just written are trusted after 2 s; then a whole no-op
# build keeps a record (after a new compiler, one more: the first asks its
# version and keeps the answer, which is trusted 2 s later), and the next
# build is answered from it.
settle() {
  local i
  for i in 1 2 3; do
    sleep 3.1
    build
    expect_status 0 "settling build ($1)"
    json_is compiled 0 "settling build ($1)"
    # The whole build's output, for comparing with the fast path's.
    cp "$T/stdout" "$T/full.out"; grep -v 'trace:' "$T/stderr" >"$T/full.err"
    grep -q 'trace: fast path record kept\|trace: fast path hit' "$T/stderr" && break
  done
  [ "$i" -lt 3 ] || { fail "$1: no record kept"; cat "$T/stderr" >&2; }
  build
  hit "$1"
  json_is compiled 0 "$1: fast path"
}
same_size_edit() {
  touch -r "$1" "$T/ref"
  [ "$(printf '%s\n' "$2" | wc -c)" -eq "$(wc -c <"$1")" ] || { fail "test bug: '$2' is not the size of $1"; return; }
  printf '%s\n' "$2" >"$1"
  touch -r "$T/ref" "$1"
}

mkdir -p "$T/bin2"
wrap_cc "$T/bin"
export PATH="$T/bin2:$T/bin:$PATH"
touch -d '-1 minute' "$P"/src/*.c "$P"/src/inc/h.h "$P"/recipes/*.lua "$T/bin/cc"
# gk.stat's "settled" counts whole seconds: 3 s are surely past 2.
sleep 3.1

build
expect_status 0 "first build"
json_is compiled 5 "first build"
missed "first build"
grep -q 'fast path: no record yet' "$T/stderr" || fail "the first build does not say it has no record"

# A hit prints what a whole build prints (but the trace and the seconds).
settle "no-op build"
grep -v 'trace:' "$T/stderr" | cmp -s - "$T/full.err" || fail "the fast path printed other lines: $(cat "$T/stderr")"
python3 - "$T/full.out" "$T/stdout" <<'PY' || fail "the fast path's summary differs: $(cat "$T/stdout")"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert list(a) == list(b), (list(a), list(b))
a.pop("seconds"), b.pop("seconds")
assert a == b, (a, b)
PY
n=$(grep -l '"gk-build-fast"' "$C"/v1/index/*/*.json | wc -l)
[ "$n" -eq 1 ] || fail "expected one fast path record, found $n"
# Without --json, the same lines.
run "$GK" build --recipes "$P/recipes" --out "$T/out" --cache "$C"
hit "no-op build without --json"
[ ! -s "$T/stdout" ] || fail "the fast path printed a summary without --json"
# Other options are another build: -j alone is not.
build -j1
hit "-j 1"
build --backend cpu
missed "--backend cpu"
json_is compiled 0 "--backend cpu"

# A header edited in place: same size, same mtime to the ns.
settle "before the header edit"
same_size_edit "$P/src/inc/h.h" '#define SCALE 7'
build
missed "header edited"
json_is compiled 4 "header edited with the same size and mtime"

# The source, the same way.
settle "before the source edit"
cp "$P/src/k.c" "$T/k.c.orig"
same_size_edit "$P/src/k.c" "$(sed 's/x \* SCALE/SCALE * x/' "$T/k.c.orig")"
build
missed "source edited"
json_is compiled 4 "source edited with the same size and mtime"

# A header renamed over (new inode), same size and mtime.
settle "before the rename"
printf '#define SCALE 8\n' >"$T/h.new"; touch -r "$P/src/inc/h.h" "$T/h.new"
mv "$T/h.new" "$P/src/inc/h.h"
build
missed "header renamed over"
json_is compiled 4 "header renamed over"

# The compiler replaced with one of the same size and mtime.
settle "before replacing the compiler"
sed -i.bak 's/90\.1\.0/90.2.0/' "$T/bin/cc"
touch -r "$T/bin/cc.bak" "$T/bin/cc"
build
missed "compiler replaced"
json_is compiled 5 "compiler replaced with the same size and mtime"

# Another compiler put earlier on PATH (PATH itself unchanged).
settle "before a compiler appears earlier on PATH"
sed 's/90\.2\.0/90.3.0/' "$T/bin/cc" >"$T/bin2/cc"; chmod +x "$T/bin2/cc"
build
missed "compiler earlier on PATH"
json_is compiled 5 "compiler earlier on PATH"
grep -q '"toolchain": "cc 90.3.0 ' "$T/out/manifest.json" || fail "the compiler earlier on PATH was not used"

# Changed flags in a recipe; then a new recipe.
settle "before changing flags"
sed -i 's/targets = { "x86-64" } }/targets = { "x86-64" }, flags = { "-DEXTRA=1" } }/' "$P/recipes/o.lua"
grep -q EXTRA "$P/recipes/o.lua" || fail "test bug: o.lua was not edited"
build
missed "recipe flags changed"
json_is compiled 1 "recipe flags changed"
settle "before adding a recipe"
sed 's/kernel "o"/kernel "o2"/' "$P/recipes/o.lua" >"$P/recipes/o2.lua"
build
missed "recipe added"
json_is images 6 "recipe added"
json_is written 1 "recipe added (the same image as o's, from the cache)"

# An output altered in place (same size and mtime), then one deleted.
settle "before altering an output"
img=$T/out/cpu/o/x86-64.so
good=$(sha256sum <"$img")
touch -r "$img" "$T/ref"
printf 'XXXX' | dd of="$img" bs=1 seek=100 conv=notrunc status=none
touch -r "$T/ref" "$img"
build
missed "output altered"
json_is written 1 "altered output rewritten"
[ "$(sha256sum <"$img")" = "$good" ] || fail "the altered image was not restored"
settle "before deleting an output"
rm "$img"
build
missed "output deleted"
json_is written 1 "deleted output rewritten"

# An object gone from the cache: compiled again, as a whole build would.
settle "before removing an object"
sha=$(sha256sum <"$T/out/cpu/o/x86-64.so" | cut -c1-64)
rm "$C/v1/objects/${sha:0:2}/$sha" || fail "test bug: o's object is not in the cache"
build
missed "object removed"
json_is compiled 2 "object removed (o and o2 share it)"

# Another PATH (here: one folder more) is another environment.
settle "before changing PATH"
PATH="$T/bin3:$PATH" build
missed "PATH changed"
json_is compiled 0 "PATH changed"

# A git checkout: the manifest records its revision and dirty flag, so a
# change anywhere in the checkout (here a file no recipe reads) is a miss.
if command -v git >/dev/null; then
  export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
  git -C "$P" init -q && echo notes >"$P/README" && git -C "$P" add -A &&
    git -C "$P" commit -qm one || fail "test bug: git init failed"
  sleep 2.5
  build
  json_is compiled 0 "first build in a checkout"
  grep -q '"source_dirty": "false"' "$T/out/manifest.json" || fail "a clean checkout is not clean"
  settle "in a git checkout"
  echo more >>"$P/README"
  build
  missed "checkout made dirty"
  grep -q '"source_dirty": "true"' "$T/out/manifest.json" || fail "the dirty checkout was not seen"
fi

# A damaged record is ignored and replaced; GK_BUILD_FAST=0 and
# GK_BUILD_INDEX=0 go without it.
settle "before damaging the record"
rec=$(grep -l '"gk-build-fast"' "$C"/v1/index/*/*.json)
echo '{"format": "gk-build-fast", "version": 1, "checks": "F\t/x' >"$rec"
build
expect_status 0 "damaged record"
missed "damaged record"
grep -q 'fast path: the record is damaged' "$T/stderr" || fail "the damaged record is not reported: $(cat "$T/stderr")"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$rec" || fail "the damaged record was not replaced"
build
hit "after the damaged record"
GK_BUILD_FAST=0 build
! grep -q 'fast path hit\|fast path missed' "$T/stderr" || fail "GK_BUILD_FAST=0 still used the fast path"
json_is compiled 0 "GK_BUILD_FAST=0"
GK_BUILD_INDEX=0 build
! grep -q 'fast path hit\|fast path missed' "$T/stderr" || fail "GK_BUILD_INDEX=0 still used the fast path"

left=$(find "$C/v1/tmp" -type f)
[ -z "$left" ] || fail "temporary files left: $left"
finish
