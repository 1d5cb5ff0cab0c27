#!/bin/sh
# test_load.sh SRCROOT BUILD ARCHIVE: bench/load.sh runs (tiny: 3 runs, on the
# cpu fixture archive instead of its 500-image one) and writes a load.json
# with a plain-frame case whose numbers are there. Not a timing test: no
# number is compared with a goal here.
set -eu
root=$1 build=$2 archive=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
GK_BENCH_ARCHIVE=$archive GK_BENCH_LOAD_KERNEL=qmatmul GK_BENCH_LOAD_VARIANT=bits=4 \
GK_BENCH_LOAD_DEVICES=cpu:x86-64,cpu:x86-64-v2,cpu:x86-64-v3,cpu:x86-64-v4 GK_BENCH_LOAD_RUNS=3 \
  "$root/bench/load.sh" "$build" "$T" >"$T/out.md"
grep -q "## Load latency and memory" "$T/out.md" || { echo "FAIL: no markdown section" >&2; exit 1; }
python3 - "$T/load.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["images"] > 0 and r["cases"], r
for c in r["cases"]:
    assert c["kernel"] == "qmatmul" and c["runs"] == 3, c
    assert c["storage"] in ("zstd", "zstd-delta"), c
    for k in ("file_us", "memory_us", "bare_zstd_us", "read_us", "sha256_libsodium_us"):
        assert c[k] > 0, (k, c)
    assert c["peak_bytes_file"] >= c["raw_size"], c   # the image itself is counted
    # So are the shared libraries' allocations (the counting malloc must be
    # exported): SQLite's connection, and zstd's context during the read.
    assert c["sqlite_held_bytes"] > 0 and c["zstd_dctx_bytes"] > 0, c
    assert c["peak_bytes_memory"] >= c["raw_size"] + c["zstd_dctx_bytes"], c
print("bench/load.sh ran: %d case(s): %s" % (len(r["cases"]),
      ", ".join("%s %s" % (c["target"], c["storage"]) for c in r["cases"])))
PY
