#!/bin/bash
# gk probe for an operator (issue 21, point 5): --device takes the short
# forms or names the exact spec, or a product's name (issue 23); one line per
# kernel by default (-v for every candidate), --kernel NAME, and exit 1 when
# a kernel has no image.
. "$(dirname "$0")/lib.sh"

# Short forms of a device spec, and what each means.
while read -r spec want; do
  run "$GK" probe --device "$spec" --json; expect_status 0 "--device $spec"
  py "--device $spec means $want" "$T/stdout" "$want" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["device"] == sys.argv[2], (d["device"], sys.argv[2])
PY
done <<'SPECS'
sm_89 cuda:sm_89
cuda:8.9 cuda:sm_89
cuda:12.0,driver=12.4 cuda:sm_120,driver=12.4
gfx942 rocm:gfx942
gfx90a:xnack- rocm:gfx90a:xnack-
x86-64-v3 cpu:x86-64-v3
SPECS
# Near misses: the exact spec is suggested.
for pair in "cuda:89=cuda:sm_89" "sm89=cuda:sm_89" "compute_89=cuda:sm_89" "cuda:sm_90a=cuda:sm_90"; do
  spec=${pair%%=*}; want=${pair#*=}
  run "$GK" probe --device "$spec"; expect_status 2 "--device $spec"
  expect_err "did you mean $want?" "--device $spec suggests $want"
done

# A product's name (issue 23): its target, said first, then the products of
# that target; in any case, with the vendor or without.
for pair in "RTX 4090=cuda:sm_89=GeForce RTX 4090" "NVIDIA GeForce RTX 4090=cuda:sm_89=GeForce RTX 4090" \
            "rtx4090=cuda:sm_89=GeForce RTX 4090" "MI300X=rocm:gfx942=AMD Instinct MI300X" \
            "Radeon RX 7900 XTX=rocm:gfx1100=Radeon RX 7900 XTX"; do
  name=${pair%%=*}; rest=${pair#*=}; want=${rest%%=*}; product=${rest#*=}
  run "$GK" probe --device "$name" --json; expect_status 0 "--device '$name'"
  py "--device '$name' is $want ($product)" "$T/stdout" "$want" "$product" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["device"] == sys.argv[2] and d["product"] == sys.argv[3], d
assert sys.argv[3] in d["products"], d["products"]
PY
done
run "$GK" probe --device 'RTX 4090'; expect_status 0 "--device 'RTX 4090' (text)"
[ "$(head -1 "$T/stdout")" = "RTX 4090 is cuda:sm_89 (GeForce RTX 4090)" ] || fail "--device 'RTX 4090' says first which target it is: $(cat "$T/stdout")"
grep -q '^products: NVIDIA L4, .*GeForce RTX 4090, .*GeForce RTX 4050$' "$T/stdout" || fail "probe names the products of sm_89: $(cat "$T/stdout")"
# A spec names the products of its target too; a cpu has none.
run "$GK" probe --device gfx90a:xnack- --json; expect_status 0 "--device gfx90a:xnack-"
py "gfx90a's products" "$T/stdout" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["products"] == ["AMD Instinct MI210", "AMD Instinct MI250", "AMD Instinct MI250X"], d
assert "product" not in d
PY
run "$GK" probe --device x86-64-v3; expect_status 0 "--device x86-64-v3"
grep -q '^products:' "$T/stdout" && fail "a cpu device has no products line"
# An unknown name, or one of several targets: exit 2 and the closest names
# (the exact lines: tests/cli/bad_inputs.tsv).
run "$GK" probe --device 'RTX 4099'; expect_status 2 "--device 'RTX 4099'"
expect_err "closest: GeForce RTX 4090 (cuda:sm_89)" "--device 'RTX 4099' suggests the RTX 4090"
run "$GK" probe --device 'RTX 6000'; expect_status 2 "--device 'RTX 6000'"
expect_err "(cuda:sm_75)" "--device 'RTX 6000' lists the targets it could be"

# One line per kernel and variant; the reason when none fits.
run "$GK" probe "$ARCHIVE" --device cpu:x86-64-v2; expect_status 0 "probe (every kernel has an image)"
n=$("$GK" ls "$ARCHIVE" --json | python3 -c 'import json,sys; print(len({(r["kernel"], r["variant"]) for r in json.load(sys.stdin)["images"]}))')
[ "$(grep -c ' -> ' "$T/stdout")" -eq "$n" ] || fail "probe: expected $n kernel lines: $(cat "$T/stdout")"
grep -q '^      [-+*] ' "$T/stdout" && fail "probe without -v lists candidates"
run "$GK" probe "$ARCHIVE" --device cpu:x86-64-v2 -v; expect_status 0 "probe -v"
grep -q '^      \* cpu x86-64-v2 (so): x86-64-v2 runs on x86-64-v2$' "$T/stdout" || fail "probe -v lists no candidates"

# No image for the device: exit 1, one line per kernel, and a count.
run "$GK" probe "$ARCHIVE" --device sm_89; expect_status 1 "probe: no cuda image"
[ "$(grep -c ' -> none: no cuda image$' "$T/stdout")" -eq "$n" ] || fail "probe: expected $n 'no cuda image' lines: $(cat "$T/stdout")"
expect_err_line "gk probe: $n of $n kernels/variants have no image for cuda:sm_89" "probe counts the kernels without an image"

# --kernel: only that kernel's variants.
run "$GK" probe "$ARCHIVE" --device cpu:x86-64-v3 --kernel qmatmul --json; expect_status 0 "probe --kernel"
py "probe --kernel qmatmul" "$T/stdout" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert [(i["kernel"], i["variant"]) for i in d["images"]] == [("qmatmul", "bits=%d" % b) for b in (1, 2, 4, 8)], d["images"]
assert d["missing"] == 0
PY
finish
