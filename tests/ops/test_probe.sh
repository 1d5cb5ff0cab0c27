#!/bin/bash
# gk probe explains its choice: for each kernel, every image with the rule's
# verdict ('*' chosen, '+' fits, '-' does not) and the reason, in text and JSON.
. "$(dirname "$0")/lib.sh"

run "$GK" probe --help; expect_status 0 "probe --help"
expect_out "'*' the one chosen" "probe --help explains the markers"
expect_out "--kernel NAME" "probe --help documents --kernel"

# A described device: the chosen image is the highest level not above it.
run "$GK" probe "$ARCHIVE" --device cpu:x86-64-v2 --json; expect_status 0 "probe --json"
cp "$T/stdout" "$T/v2.json"
py "probe --json candidates" "$T/v2.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["device"].startswith("cpu:x86-64-v2") and "backends" not in d
lv = {"x86-64": 1, "x86-64-v2": 2, "x86-64-v3": 3, "x86-64-v4": 4}
assert d["images"], "no images"
for im in d["images"]:
    c = im["candidates"]
    assert c, im
    chosen = [x for x in c if x["chosen"]]
    assert len(chosen) == 1 and chosen[0]["target"] == im["target"] == "x86-64-v2", im
    for x in c:
        assert x["backend"] == "cpu" and x["format"] == "so"
        assert x["fits"] == (lv[x["target"]] <= 2), x
        if x["fits"]:
            assert x["why"] == "%s runs on x86-64-v2" % x["target"], x
        else:
            assert x["why"] == "needs %s, device is x86-64-v2" % x["target"], x
PY
run "$GK" probe "$ARCHIVE" --device cpu:x86-64-v2 -v; expect_status 0 "probe -v (text)"
py "probe text lists the candidates under each kernel" "$T/stdout" "$T/v2.json" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
d = json.load(open(sys.argv[2]))
i = lines.index("images:") + 1
for im in d["images"]:
    head = lines[i].split()
    assert head[0] == im["kernel"] and head[-2:] == ["x86-64-v2", "(so)"], (lines[i], im)
    i += 1
    for c in im["candidates"]:
        mark = "*" if c["chosen"] else "+" if c["fits"] else "-"
        want = "      %s cpu %s (so): %s" % (mark, c["target"], c["why"])
        assert lines[i] == want, (lines[i], want)
        i += 1
assert i == len(lines), lines[i:]
PY

# Nothing fits a GPU device: every candidate says why, none is chosen.
run "$GK" probe "$ARCHIVE" --device cuda:sm_86 --json; expect_status 1 "probe cuda --json"
py "probe cuda candidates" "$T/stdout" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for im in d["images"]:
    assert im["error"] == "no image in the archive fits the device", im
    assert im["candidates"] and not any(c["fits"] or c["chosen"] for c in im["candidates"])
    assert all(c["why"] == "built for cpu, device is cuda" for c in im["candidates"]), im
PY
run "$GK" probe "$ARCHIVE" --device cuda:sm_86 -v; expect_status 1 "probe cuda -v (text)"
expect_out "      - cpu x86-64-v3 (so): built for cpu, device is cuda" "probe cuda text gives the reason"

# The synthetic archive has cuda PTX and cubins: --no-jit is passed through
# (the cpu device is unaffected, and says so by choosing the same images).
make_synthetic "$T/syn.gkfat"
run "$GK" probe "$T/syn.gkfat" --device cpu:x86-64-v3 --no-jit --json; expect_status 1 "probe --no-jit (rmsnorm has no cpu image)"
py "probe --no-jit on a cpu device" "$T/stdout" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
got = {(i["kernel"], i["variant"]): i.get("target") for i in d["images"]}
assert got[("qmatmul", "bits=4")] == "x86-64-v3" and got[("softmax", "")] == "x86-64", got
q = [i for i in d["images"] if i["kernel"] == "qmatmul" and i["variant"] == "bits=4"][0]
assert [(c["backend"], c["target"]) for c in q["candidates"]] == [("cpu", "x86-64-v3"),
    ("cuda", "compute_90"), ("cuda", "sm_80"), ("cuda", "sm_90a"), ("rocm", "gfx90a:xnack+")], q
assert [c["why"] for c in q["candidates"][1:]] == ["built for cuda, device is cpu"] * 3 + ["built for rocm, device is cpu"]
PY

# The detected device: the backends are listed, and the chosen image fits.
run "$GK" probe "$ARCHIVE" --json; expect_status 0 "probe detected --json"
py "probe on the detected device" "$T/stdout" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["backend"] == "cpu" and any(b["backend"] == "cpu" and b["present"] for b in d["backends"])
for im in d["images"]:
    assert sum(c["chosen"] for c in im["candidates"]) == (0 if "error" in im else 1), im
PY
finish
