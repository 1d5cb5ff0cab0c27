#!/bin/sh
# Reproducible releases: two clean checkouts of one revision at different
# paths, built with separate cold caches, give byte-identical archives; the
# archive's metadata names the revision, the dirty flag, the toolchains and
# the recipes' hashes (gk ls --meta), and none of it depends on paths.
# Usage: test_reproducible.sh GK SOURCE_ROOT
. "$(dirname "$0")/lib.sh"
SRC=$2
command -v git >/dev/null 2>&1 || { echo "SKIP: git is not installed (ci/setup.sh installs it)"; exit 77; }

# One commit of the real recipes and kernel sources, then a clone elsewhere.
mkdir -p "$T/a"
cp -r "$SRC/recipes" "$SRC/kernelsrc" "$T/a/"
echo "notes" >"$T/a/NOTES"
export GIT_AUTHOR_DATE="2025-01-01T00:00:00Z" GIT_COMMITTER_DATE="2025-01-01T00:00:00Z"
g() { git -c user.name=gk-test -c user.email=gk-test@localhost -c init.defaultBranch=main "$@"; }
g -C "$T/a" init -q && g -C "$T/a" add -A && g -C "$T/a" commit -q -m snapshot || fail "git commit"
g clone -q "$T/a" "$T/elsewhere/b" || fail "git clone"
head=$(git -C "$T/a" rev-parse HEAD)

# One target keeps it short: every kernel, cold, twice.
build() { # CHECKOUT CACHE OUT
  run "$GK" build --recipes "$1/recipes" --backend cpu --targets cpu=x86-64-v3 --cache "$2" --out "$3"
  expect_status 0 "build in $1"
  "$GK" pack "$3" -o "$3.gkfat" 2>/dev/null || fail "pack of $3"
}
build "$T/a" "$T/cache-a" "$T/out-a"
build "$T/elsewhere/b" "$T/cache-b" "$T/out-b"
grep -q ' 0 from cache' "$T/stderr" || fail "the second build was not cold: $(tail -1 "$T/stderr")"
cmp -s "$T/out-a.gkfat" "$T/out-b.gkfat" || fail "two clean checkouts gave different archives"
for f in "$T/out-a.gkfat" "$T/out-b.gkfat"; do
  grep -qaF "$T" "$f" && fail "'$f' contains the path '$T'"
done

# The metadata.
[ "$(meta "$T/out-a.gkfat" source_revision)" = "$head" ] || fail "source_revision is not HEAD ($head)"
[ "$(meta "$T/out-a.gkfat" source_dirty)" = "false" ] || fail "a clean checkout is not source_dirty false"
meta "$T/out-a.gkfat" toolchains | grep -q '"cc ' || fail "toolchains lacks cc: $(meta "$T/out-a.gkfat" toolchains)"
meta "$T/out-a.gkfat" recipes | python3 -c '
import hashlib, json, os, sys
rec = json.load(sys.stdin)
d = sys.argv[1]
names = sorted(n for n in os.listdir(d) if n.endswith(".lua"))
for n in names:
    want = hashlib.sha256(open(os.path.join(d, n), "rb").read()).hexdigest()
    assert rec.get(n) == want, (n, rec.get(n), want)
assert "toolchains/cc.lua" in rec, rec
' "$T/a/recipes" || fail "recipes metadata does not hash the recipe files"
run "$GK" ls --meta "$T/out-a.gkfat"
expect_status 0 "gk ls --meta"
grep -qE "^source_revision +$head\$" "$T/stdout" || fail "gk ls --meta lacks the revision: $(cat "$T/stdout")"
grep -qE '^recipes +qmatmul\.lua [0-9a-f]{64}$' "$T/stdout" || fail "gk ls --meta lacks a recipe hash"

# A change to a tracked file: dirty, and only the metadata differs.
echo "more notes" >>"$T/elsewhere/b/NOTES"
build "$T/elsewhere/b" "$T/cache-b" "$T/out-b"
[ "$(meta "$T/out-b.gkfat" source_dirty)" = "true" ] || fail "an edited checkout is not source_dirty true"
"$GK" ls --json "$T/out-a.gkfat" >"$T/ls-a" && "$GK" ls --json "$T/out-b.gkfat" >"$T/ls-b"
cmp -s "$T/ls-a" "$T/ls-b" || fail "a dirty flag changed the images"
# An untracked file does not make a checkout dirty.
git -C "$T/elsewhere/b" checkout -q -- NOTES && echo x >"$T/elsewhere/b/untracked"
build "$T/elsewhere/b" "$T/cache-b" "$T/out-b"
cmp -s "$T/out-a.gkfat" "$T/out-b.gkfat" || fail "an untracked file changed the archive"

# Outside a git checkout: unknown.
cp -r "$T/a/recipes" "$T/a/kernelsrc" "$T/elsewhere/"
rm -rf "$T/elsewhere/b"
build "$T/elsewhere" "$T/cache-b" "$T/out-c"
[ "$(meta "$T/out-c.gkfat" source_revision)" = "unknown" ] || fail "no checkout: revision is not unknown"
[ "$(meta "$T/out-c.gkfat" source_dirty)" = "unknown" ] || fail "no checkout: dirty is not unknown"
finish
