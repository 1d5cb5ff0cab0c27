#!/bin/bash
# gk diff: targets, kernels, variants and images added, removed, changed.
. "$(dirname "$0")/lib.sh"

run "$GK" diff --help; expect_status 0 "diff --help"
expect_out "Exit status: 0 whether or not" "diff --help documents the exit status"
run "$GK" diff "$ARCHIVE"; expect_status 2 "diff with one archive"
run "$GK" diff "$ARCHIVE" "$ARCHIVE" "$ARCHIVE"; expect_status 2 "diff with three archives"
run "$GK" diff "$ARCHIVE" "$T/missing.gkfat"; expect_status 1 "diff with a missing archive"
expect_err "missing.gkfat" "diff names the archive it cannot read"
echo "not sqlite" >"$T/junk.gkfat"
run "$GK" diff "$T/junk.gkfat" "$ARCHIVE"; expect_status 1 "diff with a non-archive"
expect_err "junk.gkfat" "diff names the non-archive"

# An archive against itself.
n=$("$GK" ls "$ARCHIVE" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["images"]))')
run "$GK" diff "$ARCHIVE" "$ARCHIVE"; expect_status 0 "diff of identical archives"
expect_out "no differences: $n images in both" "diff of identical archives says so"
run "$GK" diff "$ARCHIVE" "$ARCHIVE" --json; expect_status 0 "diff --json identical"
py "diff --json identical" "$T/stdout" "$n" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["identical"] is True and d["unchanged"] == int(sys.argv[2]) > 0, d
for lv in ("targets", "kernels", "variants", "images"):
    assert d[lv]["added"] == [] and d[lv]["removed"] == [], lv
assert d["images"]["changed"] == []
PY

# Two releases. Old: qmatmul bits=4 on x86-64 and v3, bits=8 on v3, gelu.
# New: bits=4 v3 rebuilt (other bytes), bits=8 v3 the same bytes under a new
# toolchain name, bits=2 added, cuda sm_90 added, softmax added, x86-64 and
# gelu gone.
"$MKARCHIVE" "$T/old.gkfat" \
  "qmatmul|cpu|x86-64|bits=4|so|=A" "qmatmul|cpu|x86-64-v3|bits=4|so|=B" \
  "qmatmul|cpu|x86-64-v3|bits=8|so|=C|cc 12" "gelu|cpu|x86-64||so|=D" || fail "mkarchive old"
"$MKARCHIVE" "$T/new.gkfat" \
  "qmatmul|cpu|x86-64-v3|bits=4|so|=B2!" "qmatmul|cpu|x86-64-v3|bits=8|so|=C|cc 13" \
  "qmatmul|cpu|x86-64-v3|bits=2|so|=E" "qmatmul|cuda|sm_90|bits=4|cubin|=F" \
  "softmax|cpu|x86-64-v3||so|=G" || fail "mkarchive new"
run "$GK" diff "$T/old.gkfat" "$T/new.gkfat" --json; expect_status 0 "diff --json of two releases"
py "diff --json of two releases" "$T/stdout" <<'PY'
import hashlib, json, sys
d = json.load(open(sys.argv[1]))
sha = lambda s: hashlib.sha256(s.encode()).hexdigest()
assert d["identical"] is False
assert d["targets"] == {"added": [{"backend": "cuda", "target": "sm_90"}],
                        "removed": [{"backend": "cpu", "target": "x86-64"}]}, d["targets"]
assert d["kernels"] == {"added": ["softmax"], "removed": ["gelu"]}, d["kernels"]
assert d["variants"] == {"added": [{"kernel": "qmatmul", "variant": "bits=2"},
                                   {"kernel": "softmax", "variant": ""}],
                         "removed": [{"kernel": "gelu", "variant": ""}]}, d["variants"]
im = d["images"]
key = lambda o: (o["kernel"], o["variant"], o["backend"], o["target"])
assert sorted(map(key, im["added"])) == [("qmatmul", "bits=2", "cpu", "x86-64-v3"),
    ("qmatmul", "bits=4", "cuda", "sm_90"), ("softmax", "", "cpu", "x86-64-v3")], im["added"]
assert sorted(map(key, im["removed"])) == [("gelu", "", "cpu", "x86-64"),
    ("qmatmul", "bits=4", "cpu", "x86-64")], im["removed"]
added = {key(o): o["image"] for o in im["added"]}
assert added[("qmatmul", "bits=4", "cuda", "sm_90")]["format"] == "cubin"
assert added[("qmatmul", "bits=4", "cuda", "sm_90")]["sha256"] == sha("F")
ch = {key(o): o for o in im["changed"]}
assert set(ch) == {("qmatmul", "bits=4", "cpu", "x86-64-v3"), ("qmatmul", "bits=8", "cpu", "x86-64-v3")}, ch
b4 = ch[("qmatmul", "bits=4", "cpu", "x86-64-v3")]
assert b4["fields"] == ["sha256", "size"], b4
assert (b4["old"]["sha256"], b4["new"]["sha256"]) == (sha("B"), sha("B2!"))
assert (b4["old"]["size"], b4["new"]["size"]) == (1, 3)
b8 = ch[("qmatmul", "bits=8", "cpu", "x86-64-v3")]
assert b8["fields"] == ["toolchain"] and b8["old"]["toolchain"] == "cc 12" and b8["new"]["toolchain"] == "cc 13", b8
assert d["unchanged"] == 0
PY
run "$GK" diff "$T/old.gkfat" "$T/new.gkfat"; expect_status 0 "diff (text) of two releases"
for line in "target added: cuda sm_90" "target removed: cpu x86-64" "kernel added: softmax" \
    "kernel removed: gelu" "variant added: qmatmul bits=2" "variant removed: gelu" \
    "image added: qmatmul bits=4 cuda sm_90 (cubin, 1 bytes)" "image removed: qmatmul bits=4 cpu x86-64 (so, 1 bytes)" \
    "image changed: qmatmul bits=4 cpu x86-64-v3: sha256 " "image changed: qmatmul bits=8 cpu x86-64-v3: toolchain 'cc 12' -> 'cc 13'" \
    "images: 3 added, 2 removed, 2 changed, 0 unchanged"; do
  expect_out "$line" "diff text"
done
# Reversed, added and removed swap.
run "$GK" diff "$T/new.gkfat" "$T/old.gkfat"; expect_status 0 "diff reversed"
expect_out "target added: cpu x86-64" "diff reversed: x86-64 comes back"
expect_out "images: 2 added, 3 removed, 2 changed, 0 unchanged" "diff reversed: counts swap"
finish
