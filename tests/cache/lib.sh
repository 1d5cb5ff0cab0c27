# lib.sh - sourced by the cache tests: a scratch folder, a snapshot of the
# project's cpu recipes, a reference build and assertions.
# Usage: . "$(dirname "$0")/lib.sh" with $1 = the gk binary, $2 = the source tree.
set -u
GK=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0
export GK_CACHE_DIR="$T/default-cache" # never the user's cache

. "$(dirname "$0")/../common/check.sh"
note() { echo "$*"; }

command -v cc >/dev/null || skip "no C compiler 'cc' on PATH: the cpu recipes cannot be built"
command -v python3 >/dev/null || skip "python3 is needed to read --json output"

# The recipes and sources are copied first: other work in the tree may edit
# them while the test runs, and every build here must see the same bytes.
# Two kernels at one x86-64 level: two real compiles per build, enough to
# race and to kill in the middle, few enough for a loaded 2-core machine
# (every test here runs several builds).
P=$T/src
mkdir -p "$P/recipes"
cp "$SRC/recipes/rmsnorm.lua" "$SRC/recipes/argmax.lua" "$P/recipes/"
cp -r "$SRC/kernelsrc" "$P/kernelsrc"
NIMAGES=2

# build CACHE OUT [gk build options...]: the snapshot's cpu images. Leaves
# the --json summary in OUT.json and stderr in OUT.err; returns gk's status.
build() {
  local cache=$1 out=$2
  shift 2
  "$GK" build --recipes "$P/recipes" --backend cpu --targets cpu=x86-64 \
    --cache "$cache" --out "$out" --json "$@" >"$out.json" 2>"$out.err"
}

# json FILE EXPR: prints a Python expression over the JSON in FILE (as d).
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

# verify_clean CACHE WHAT: gk cache verify exits 0 and finds nothing at all.
verify_clean() {
  "$GK" cache verify --cache "$1" --json >"$T/verify.json" 2>"$T/verify.err"
  local st=$?
  [ "$st" -eq 0 ] || fail "$2: gk cache verify exit $st: $(cat "$T/verify.json" "$T/verify.err")"
  [ "$(json "$T/verify.json" 'len(d["findings"])')" = 0 ] ||
    fail "$2: gk cache verify found: $(cat "$T/verify.json")"
}

# reference: one uninterrupted build in a fresh cache, packed: $REF.
reference() {
  build "$T/ref-cache" "$T/ref-out" || { cat "$T/ref-out.err" >&2; fail "reference build"; finish; }
  "$GK" pack "$T/ref-out" -o "$T/ref.gkfat" 2>"$T/pack.err" || { cat "$T/pack.err" >&2; fail "pack reference"; finish; }
  REF=$T/ref.gkfat
  [ "$(json "$T/ref-out.json" 'd["compiled"]')" = "$NIMAGES" ] || fail "reference build compiled $(json "$T/ref-out.json" 'd["compiled"]'), expected $NIMAGES"
}

# same_archive OUT WHAT: packs OUT and compares it with $REF byte for byte.
same_archive() {
  "$GK" pack "$1" -o "$1.gkfat" 2>"$T/pack.err" || { fail "$2: pack: $(cat "$T/pack.err")"; return; }
  cmp -s "$1.gkfat" "$REF" || fail "$2: archive differs from the uninterrupted build's"
}

now_ms() { date +%s%3N; }
