#!/bin/bash
# gk cache gc: trims to the size asked, leaves a consistent cache, and a
# rebuild compiles exactly what was trimmed; a gc while a build runs costs
# that build a recompile, never its result.
. "$(dirname "$0")/lib.sh"

t0=$(now_ms)
reference
C=$T/ref-cache

# ---- (c) gc to a size ------------------------------------------------------------
"$GK" cache stats --cache "$C" --json >"$T/s0.json" || fail "stats"
total=$(json "$T/s0.json" 'd["total_bytes"]')
objects=$(json "$T/s0.json" 'd["objects"]')
# One byte under the total: the least recently used object (and the record
# that named only it) must go, and no more.
limit=$((total - 1))
"$GK" cache gc --cache "$C" --max-size "$limit" --json >"$T/gc.json" 2>"$T/gc.err" ||
  fail "gc --max-size $limit: $(cat "$T/gc.json" "$T/gc.err")"
after=$(json "$T/gc.json" 'd["after_bytes"]')
removed=$(json "$T/gc.json" 'd["removed_objects"]')
note "gc: $total -> $after bytes (limit $limit), removed $removed of $objects objects"
[ "$after" -le "$limit" ] || fail "gc left $after bytes, over the $limit asked"
[ "$removed" -eq 1 ] || fail "gc removed $removed of $objects objects, expected 1"
# Measured independently of gk: disk usage of the entries, as du counts it.
du_bytes=$(cd "$C/v1" && find objects keys runs index -type f -printf '%b\n' 2>/dev/null | awk '{ s += $1 * 512 } END { print s + 0 }')
[ "$du_bytes" -le "$limit" ] || fail "the entries take $du_bytes bytes on disk after gc, over $limit"
verify_clean "$C" "after gc"

# Which images lost their object: exactly those are compiled again.
lost=$(python3 - "$C" "$T/ref-out/manifest.json" <<'PY'
import json, os, sys
c, m = sys.argv[1], json.load(open(sys.argv[2]))
print(sum(not os.path.exists(os.path.join(c, "v1/objects", i["sha256"][:2], i["sha256"]))
          for i in m["images"]))
PY
)
[ "$lost" -gt 0 ] || fail "gc removed no object of the build's images"
build "$C" "$T/c-out" || fail "rebuild after gc: $(cat "$T/c-out.err")"
[ "$(json "$T/c-out.json" 'd["compiled"]')" = "$lost" ] ||
  fail "rebuild after gc compiled $(json "$T/c-out.json" 'd["compiled"]'), expected the $lost trimmed"
[ "$(json "$T/c-out.json" 'd["cached"]')" = "$((NIMAGES - lost))" ] || fail "rebuild after gc: cached count"
same_archive "$T/c-out" "rebuild after gc"
verify_clean "$C" "after the rebuild"

# Sizes with units, and gc to nothing: every entry goes, nothing dangles.
"$GK" cache gc --cache "$C" --max-size 1G --json >"$T/gc.json" || fail "gc --max-size 1G"
[ "$(json "$T/gc.json" 'd["max_bytes"]')" = 1073741824 ] || fail "1G is not 1073741824 bytes"
[ "$(json "$T/gc.json" 'd["removed_objects"]')" = 0 ] || fail "gc under the size removed objects"
"$GK" cache gc --cache "$C" --max-size 0 >"$T/gc.out" || fail "gc --max-size 0"
grep -q "removed .* objects" "$T/gc.out" || fail "gc prints what it removed: $(cat "$T/gc.out")"
[ -z "$(find "$C/v1/objects" "$C/v1/keys" -type f)" ] || fail "gc to 0 left entries"
verify_clean "$C" "after gc to 0"
build "$C" "$T/c-out" || fail "rebuild after gc to 0"
[ "$(json "$T/c-out.json" 'd["compiled"]')" = "$NIMAGES" ] || fail "rebuild after gc to 0 compiles everything"
note "(c) done in $(($(now_ms) - t0)) ms"

# ---- (d) gc while a build runs ---------------------------------------------------------
# A cc in front of the real one holds the compiles of argmax until told to
# go, so that gc runs after the build has looked up (and hit) rmsnorm and
# before it copies rmsnorm out of the cache.
real_cc=$(command -v cc)
mkdir -p "$T/bin"
cat >"$T/bin/cc" <<EOF
#!/bin/sh
case "\$*" in
  *argmax.c*)
    if [ -e "$T/hold" ]; then
      : >"$T/held"
      i=0
      while [ ! -e "$T/go" ] && [ \$i -lt 1200 ]; do sleep 0.1; i=\$((i + 1)); done
    fi ;;
esac
exec "$real_cc" "\$@"
EOF
chmod +x "$T/bin/cc"
export PATH="$T/bin:$PATH"
D=$T/d-cache
build "$D" "$T/d1" || fail "(d) first build: $(cat "$T/d1.err")"
echo '/* changed */' >>"$P/kernelsrc/cpu/argmax.c"
: >"$T/hold"
build "$D" "$T/d2" &
bpid=$!
for _ in $(seq 1200); do [ -e "$T/held" ] && break; sleep 0.1; done
[ -e "$T/held" ] || fail "(d) the build never reached the held compile"
"$GK" cache gc --cache "$D" --max-size 0 --json >"$T/dgc.json" || fail "(d) gc during the build"
: >"$T/go"
wait "$bpid" || fail "(d) the build that lost its cache entries failed: $(cat "$T/d2.err")"
note "(d) gc removed $(json "$T/dgc.json" 'd["removed_objects"]') objects while the build ran;" \
     "it compiled $(json "$T/d2.json" 'd["compiled"]')"
# argmax (changed, held) plus rmsnorm (hit before gc, lost to it) compiled.
[ "$(json "$T/d2.json" 'd["compiled"]')" = "$NIMAGES" ] ||
  fail "(d) expected $NIMAGES compiles (argmax changed, rmsnorm lost to gc): $(cat "$T/d2.json")"
"$GK" pack "$T/d2" -o "$T/d2.gkfat" 2>"$T/pack.err" || fail "(d) pack: $(cat "$T/pack.err")"
"$GK" verify "$T/d2.gkfat" >"$T/dv.out" 2>&1 || fail "(d) archive does not verify: $(cat "$T/dv.out")"
verify_clean "$D" "(d) after the build"

finish
