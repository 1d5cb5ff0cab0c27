#!/bin/sh
# gk build --shard I/N and gk pack --merge: the three slices of the real cpu
# recipes, merged, equal the unsharded archive byte for byte; the slices
# are disjoint, cover the matrix and do not depend on the order of recipes;
# identical rows merge, conflicting ones are refused and named.
# Usage: test_shard.sh GK SOURCE_ROOT TEST_CACHE (warm: fixture.archive).
. "$(dirname "$0")/lib.sh"
SRC=$2 CACHE=$3

# The real recipes, copied (a stable snapshot while others edit the tree).
mkdir -p "$T/p"
cp -r "$SRC/recipes" "$SRC/kernelsrc" "$T/p/"
build() { run "$GK" build --recipes "$T/p/recipes" --backend cpu --cache "$CACHE" "$@"; }

build --out "$T/full"
expect_status 0 "unsharded build"
"$GK" pack "$T/full" -o "$T/full.gkfat" 2>/dev/null || fail "pack of the unsharded build"
total=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["images"]))' "$T/full/manifest.json")
[ "$total" -ge 3 ] || fail "too few images to shard: $total"

sum=0
for i in 1 2 3; do
  build --out "$T/s$i" --shard "$i/3" --json
  expect_status 0 "shard $i/3"
  expect_err_line "gk build: shard $i/3" "shard $i/3 says so"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["shard"] == sys.argv[2], d' \
    "$T/stdout" "$i/3" || fail "--json summary lacks shard $i/3"
  n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["images"]))' "$T/s$i/manifest.json")
  echo "shard $i/3: $n of $total images"
  sum=$((sum + n))
  "$GK" pack "$T/s$i" -o "$T/s$i.gkfat" 2>/dev/null || fail "pack of shard $i"
done
[ "$sum" -eq "$total" ] || fail "the shards hold $sum images, the matrix $total"
# Disjoint and covering: every image path in exactly one shard.
cat "$T"/s[123]/manifest.json | python3 -c '
import json, sys
paths = []
dec = json.JSONDecoder(); text = sys.stdin.read(); i = 0
while i < len(text):
    while i < len(text) and text[i].isspace(): i += 1
    if i >= len(text): break
    d, i = dec.raw_decode(text, i)
    paths += [im["path"] for im in d["images"]]
full = [im["path"] for im in json.load(open(sys.argv[1]))["images"]]
assert sorted(paths) == sorted(full), "shards do not partition the matrix"
' "$T/full/manifest.json" || fail "shards are not a partition of the matrix"

run "$GK" pack --merge "$T/s1.gkfat" "$T/s2.gkfat" "$T/s3.gkfat" -o "$T/merged.gkfat"
expect_status 0 "merge of the three shards"
expect_err "merged 3 archives" "merge reports what it did"
cmp -s "$T/merged.gkfat" "$T/full.gkfat" || fail "merged shards differ from the unsharded archive"
# In another order, and with duplicates: the same bytes.
run "$GK" pack --merge "$T/s3.gkfat" "$T/full.gkfat" "$T/s1.gkfat" "$T/s2.gkfat" "$T/s1.gkfat" -o "$T/merged2.gkfat"
expect_status 0 "merge with identical duplicate rows"
cmp -s "$T/merged2.gkfat" "$T/full.gkfat" || fail "order or duplicates changed the merged archive"
"$GK" verify "$T/merged.gkfat" >/dev/null 2>&1 || fail "gk verify of the merged archive"

# The partition does not depend on the order in which recipes load: the
# files renamed so that they load in reverse order give the same slices.
mkdir -p "$T/q"
cp -r "$T/p/kernelsrc" "$T/q/"
mkdir "$T/q/recipes"
n=0
for f in $(ls "$T/p/recipes"/*.lua | sort -r); do
  n=$((n + 1))
  cp "$f" "$T/q/recipes/$(printf '%02d' "$n")_$(basename "$f")"
done
[ -d "$T/p/recipes/toolchains" ] && cp -r "$T/p/recipes/toolchains" "$T/q/recipes/"
run "$GK" build --recipes "$T/q/recipes" --backend cpu --cache "$CACHE" --out "$T/q2" --shard 2/3
expect_status 0 "shard 2/3 of the reordered recipes"
python3 -c '
import json, sys
a = [im["path"] for im in json.load(open(sys.argv[1]))["images"]]
b = [im["path"] for im in json.load(open(sys.argv[2]))["images"]]
assert a == b, (a, b)
' "$T/s2/manifest.json" "$T/q2/manifest.json" || fail "shard 2/3 changed with the order of recipes"

# Conflicts: two builds of one job with different bytes.
make_project "$T/c"
run "$GK" build --recipes "$T/c/recipes" --cache "$T/cc" --out "$T/c1"
"$GK" pack "$T/c1" -o "$T/c1.gkfat" 2>/dev/null
echo '#define SCALE 4' >"$T/c/src/inc/h.h"
run "$GK" build --recipes "$T/c/recipes" --cache "$T/cc" --out "$T/c2"
"$GK" pack "$T/c2" -o "$T/c2.gkfat" 2>/dev/null
run "$GK" pack --merge "$T/c1.gkfat" "$T/c2.gkfat" -o "$T/bad.gkfat"
expect_status 1 "merge of conflicting rows"
expect_err "conflicting rows" "conflict named"
expect_err "k cpu x86-64 bits=1: '$T/c1.gkfat' has sha256" "the conflicting key and first archive are named"
expect_err "'$T/c2.gkfat' has" "the second archive is named"
expect_err "(4 conflicting rows" "every conflicting row is counted"
[ -e "$T/bad.gkfat" ] && fail "a refused merge wrote its output"

# Metadata that disagrees (another source revision) is refused too.
cp "$T/c1.gkfat" "$T/c3.gkfat"
sqlite3 "$T/c3.gkfat" "UPDATE meta SET value = 'deadbeef' WHERE key = 'source_revision'" ||
  fail "cannot edit a copy with sqlite3"
run "$GK" pack --merge "$T/c1.gkfat" "$T/c3.gkfat" -o "$T/bad.gkfat"
expect_status 1 "merge across source revisions"
expect_err "metadata 'source_revision' is 'unknown' in '$T/c1.gkfat' but 'deadbeef' in '$T/c3.gkfat'" \
  "revision conflict named"

# A damaged part is refused, not merged.
cp "$T/c1.gkfat" "$T/c4.gkfat"
sqlite3 "$T/c4.gkfat" "UPDATE blob SET data = zeroblob(length(data)) WHERE id = 1"
run "$GK" pack --merge "$T/c4.gkfat" -o "$T/bad.gkfat"
expect_status 1 "merge of a damaged archive"
expect_err "is damaged" "damage named"

# Usage errors.
run "$GK" pack --merge -o "$T/x.gkfat"
expect_status 2 "merge without inputs"
run "$GK" pack --merge "$T/c1.gkfat" -o "$T/c1.gkfat"
expect_status 2 "merge onto an input"
run "$GK" pack --merge "$T/c1/manifest.json" -o "$T/x.gkfat"
expect_status 1 "merge of a file that is no archive"
expect_err "is not a gllm-kernels archive" "non-archive named"
run "$GK" build --recipes "$T/c/recipes" --cache "$T/cc" --out "$T/c5" --shard 4/3
expect_status 2 "--shard 4/3"
expect_err "--shard needs I/N" "bad shard explained"
finish
