#!/bin/sh
# size.sh BUILD_DIR WORK_DIR - archive size against NVIDIA's own compressed
# fatbin of exactly the same cubins and PTX (issue 9, item 1).
#
# Builds the cuda images of the recipes (every SM of their lists plus the
# PTX) and every other backend present, with BUILD_DIR/gk (compile cache:
# $GK_BENCH_CACHE, else the build's GK_TEST_CACHE, else BUILD_DIR/bench-cache),
# packs the cuda images alone and everything together, and runs CUDA's
# fatbinary with the options `nvcc -fatbin --compress-mode=size` passes it,
# over the same cuda files: one fatbin of all of them, and one per kernel
# and variant (what separate nvcc runs would ship). Sizes are exact, and so
# is the read cost it reports: frames a read decodes (max, mean); pack
# time (CPU and wall) is the median of three runs. Prints a markdown
# section and writes WORK_DIR/size.json. Without nvcc/fatbinary it says so
# and records no ratio. For reference (zstd command line, when present):
# every image compressed alone, and streams with no random access, one per
# kernel and one of everything.
set -eu
case ${1:-} in -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ $# -eq 2 ] || { echo "usage: bench/size.sh BUILD_DIR WORK_DIR (see --help)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=$1 work=$2
gk=$build/gk
[ -x "$gk" ] || { echo "bench/size.sh: $gk missing: build the project first (ci/configure.sh $build)" >&2; exit 1; }
mkdir -p "$work"
cache=${GK_BENCH_CACHE:-$(sed -n 's/^GK_TEST_CACHE:PATH=//p' "$build/CMakeCache.txt" 2>/dev/null)}
cache=${cache:-$build/bench-cache}
d=$work/size
rm -rf "$d"
mkdir -p "$d"

fatbinary=""
for c in "$(command -v nvcc 2>/dev/null || true)" "${CUDA_HOME:-}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
  if [ -n "$c" ] && [ -x "$(dirname "$c")/fatbinary" ]; then fatbinary=$(dirname "$c")/fatbinary; break; fi
done

skip() {
  python3 -c 'import json, sys; json.dump({"skipped": sys.argv[2]}, open(sys.argv[1], "w"), indent=2)' \
    "$work/size.json" "$1"
  printf '## Archive size (issue 9, item 1)\n\nNot measured: %s.\n' "$1"
  exit 0
}
[ -n "$fatbinary" ] || skip "no CUDA toolkit here (nvcc and fatbinary, on PATH, in \$CUDA_HOME or /usr/local/cuda)"
"$gk" build --recipes "$root/recipes" --backend cuda --cache "$cache" --out "$d/cuda" >&2 ||
  skip "gk build --backend cuda failed (see above)"
"$gk" build --recipes "$root/recipes" --cache "$cache" --out "$d/all" >&2

"$gk" pack "$d/all" -o "$d/all.gkfat" >&2
depth_cap=$(sed -n 's/^#define GK_ARCHIVE_DELTA_DEPTH \([0-9]*\).*/\1/p' "$root/loader/gk.h")

python3 - "$d" "${fatbinary:-}" "$work/size.json" "$gk" "${depth_cap:-?}" <<'PY'
import collections, json, os, resource, shutil, sqlite3, subprocess, sys, time
d, fatbinary, out, gk, depth_cap = sys.argv[1:6]
# gk pack of the cuda images, three times: wall time and CPU time (this
# machine is shared, so CPU time says more about the packer).
walls, cpus = [], []
for _ in range(3):
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    subprocess.run([gk, "pack", os.path.join(d, "cuda"), "-o", os.path.join(d, "cuda.gkfat")],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    walls.append((time.monotonic() - t0) * 1000)
    cpus.append((r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1000)
pack_ms, pack_cpu_ms = sorted(walls)[1], sorted(cpus)[1]
GOAL = 0.5  # issue 9: archive at most 0.5x NVIDIA's --compress-mode=size fatbin

man = json.load(open(os.path.join(d, "cuda", "manifest.json")))
cuda = [im for im in man["images"] if im["backend"] == "cuda"]
raw = sum(im["size"] for im in cuda)

def image3(im):
    kind = "ptx" if im["format"] == "ptx" else "elf"
    sm = im["target"].split("_", 1)[1]
    return "--image3=kind=%s,sm=%s,file=%s" % (kind, sm, os.path.join(d, "cuda", im["path"]))

def fatbin(name, ims):
    f = os.path.join(d, name + ".fatbin")
    subprocess.run([fatbinary, "--create=" + f, "-64", "--compress-mode=size"] +
                   [image3(im) for im in ims], check=True)
    return os.path.getsize(f)

def stats(path, where=""):
    db = sqlite3.connect(path)
    rows = db.execute("SELECT codec, count(*), sum(length(data)), sum(raw_size) FROM blob b "
                      "WHERE sha256 IN (SELECT sha256 FROM image %s) GROUP BY codec" % where).fetchall()
    db.close()
    return {c: {"blobs": n, "packed": p, "raw": r} for c, n, p, r in rows}

def layout(path):
    """Bytes per table and index (SQLite's dbstat, when compiled in), and
    how many blobs sit at each depth of their delta chain."""
    db = sqlite3.connect(path)
    try:
        tables = dict(db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"))
    except sqlite3.Error:
        tables = {}
    parent = dict(db.execute("SELECT id, base FROM blob"))
    db.close()
    depths = collections.Counter()
    for b in parent:
        n = 0
        while parent.get(b) is not None and n <= len(parent):
            b, n = parent[b], n + 1
        depths[n] += 1
    return tables, {str(k): v for k, v in sorted(depths.items())}

ours = os.path.getsize(os.path.join(d, "cuda.gkfat"))
whole = os.path.getsize(os.path.join(d, "all.gkfat"))
cuda_in_whole = stats(os.path.join(d, "all.gkfat"), "WHERE backend = 'cuda'")
# Read cost: reading an image decompresses its chain's frames and its own.
chain_depths = layout(os.path.join(d, "cuda.gkfat"))[1]
nblobs = sum(chain_depths.values())
r = {"images": len(cuda), "raw_bytes": raw, "archive_bytes": ours,
     "frames_per_read_max": max(int(k) for k in chain_depths) + 1 if nblobs else 0,
     "frames_per_read_mean": round(sum((int(k) + 1) * v for k, v in chain_depths.items()) / nblobs, 2)
                             if nblobs else 0,
     "delta_depth_cap": depth_cap,
     "archive_blobs": stats(os.path.join(d, "cuda.gkfat")),
     "archive_tables": layout(os.path.join(d, "cuda.gkfat"))[0],
     "chain_depths": chain_depths,
     "pack_ms_median": round(pack_ms), "pack_cpu_ms_median": round(pack_cpu_ms),
     "whole_archive_bytes": whole,
     "whole_archive_images": len(json.load(open(os.path.join(d, "all", "manifest.json")))["images"]),
     "cuda_blob_bytes_in_whole": sum(v["packed"] for v in cuda_in_whole.values()),
     "goal_ratio": GOAL}
if fatbinary:
    groups = collections.OrderedDict()
    for im in cuda:
        groups.setdefault((im["kernel"], im["variant"]), []).append(im)
    r["fatbin_one_bytes"] = fatbin("all", cuda)
    r["fatbin_per_kernel_variant_bytes"] = sum(
        fatbin("%s.%d" % (k, i), ims) for i, ((k, v), ims) in enumerate(groups.items()))
    r["fatbin_per_kernel_variant_count"] = len(groups)
    base = min(r["fatbin_one_bytes"], r["fatbin_per_kernel_variant_bytes"])
    r["baseline_bytes"] = base
    r["ratio"] = ours / base
    r["met"] = r["ratio"] <= GOAL

# References with no random access, from the zstd command line at the pack
# level: what compressing an image with more of its siblings than a chain of
# GK_ARCHIVE_DELTA_DEPTH holds would give. In one stream, reading the last
# image decodes every image before it and keeps them as its window.
zstd_cli = shutil.which("zstd")
def zstd_stream(ims):
    data = b"".join(open(os.path.join(d, "cuda", im["path"]), "rb").read() for im in ims)
    return len(subprocess.run([zstd_cli, "-q", "-19", "--long=27", "-c"], input=data,
                              stdout=subprocess.PIPE, check=True).stdout)
if zstd_cli:
    families = collections.OrderedDict()
    for im in cuda:
        families.setdefault(im["kernel"], []).append(im)
    r["zstd_each_image_bytes"] = sum(zstd_stream([im]) for im in cuda)
    r["zstd_stream_per_kernel_bytes"] = sum(zstd_stream(ims) for ims in families.values())
    r["zstd_stream_per_kernel_count"] = len(families)
    r["zstd_one_stream_bytes"] = zstd_stream(cuda)
json.dump(r, open(out, "w"), indent=2, sort_keys=True)

kb = lambda n: "%.1f KB" % (n / 1000)
print("## Archive size (issue 9, item 1)\n")
print("The cuda images of the recipes (%d: cubins for every SM of their lists plus PTX, %s raw), "
      "packed by `gk pack` (zstd frames, siblings delta-coded against the raw bytes of "
      "their chain of at most %s ancestors, `GK_ARCHIVE_DELTA_DEPTH`), "
      "against CUDA's `fatbinary --compress-mode=size` (what `nvcc -fatbin --compress-mode=size` "
      "runs) over exactly the same files.\n" % (len(cuda), kb(raw), depth_cap))
print("| container | bytes | vs baseline |")
print("|---|---|---|")
if fatbinary:
    print("| fatbin, all images in one (`--compress-mode=size`) | %d | %.3f |" %
          (r["fatbin_one_bytes"], r["fatbin_one_bytes"] / base))
    print("| fatbins, one per kernel+variant (%d), summed | %d | %.3f |" %
          (len(groups), r["fatbin_per_kernel_variant_bytes"], r["fatbin_per_kernel_variant_bytes"] / base))
    print("| **gk archive, cuda only** | **%d** | **%.3f** |" % (ours, r["ratio"]))
else:
    print("| gk archive, cuda only | %d | (no fatbinary here) |" % ours)
for c, v in sorted(r["archive_blobs"].items()):
    print("| - of which `%s` blobs (%d) | %d | |" % (c, v["blobs"], v["packed"]))
print("| - blobs by depth of their chain (0 = plain) | %s | |" %
      ", ".join("%s: %d" % kv for kv in r["chain_depths"].items()))
print("| - frames decoded per read (its chain and itself), max / mean over blobs | %d / %.2f | |" %
      (r["frames_per_read_max"], r["frames_per_read_mean"]))
if r["archive_tables"]:
    print("| - pages of the `blob` table / the rest (index, its keys, meta, schema) | %d / %d | |" %
          (r["archive_tables"].get("blob", 0),
           sum(v for k, v in r["archive_tables"].items() if k != "blob")))
print("| whole archive, every backend built here (%d images) | %d | |" %
      (r["whole_archive_images"], whole))
print("| - of which cuda blobs | %d | |" % r["cuda_blob_bytes_in_whole"])
if zstd_cli:
    vs = lambda n: "%.3f" % (n / base) if fatbinary else ""
    print("| reference: each image alone, `zstd -19` | %d | %s |" %
          (r["zstd_each_image_bytes"], vs(r["zstd_each_image_bytes"])))
    print("| reference, no random access: one `zstd -19 --long` stream per kernel (%d), summed | %d | %s |" %
          (r["zstd_stream_per_kernel_count"], r["zstd_stream_per_kernel_bytes"],
           vs(r["zstd_stream_per_kernel_bytes"])))
    print("| reference, no random access: all images in one stream | %d | %s |" %
          (r["zstd_one_stream_bytes"], vs(r["zstd_one_stream_bytes"])))
print()
if fatbinary:
    print("Goal: at most %.2fx the smaller fatbin; measured **%.3fx**: %s." %
          (GOAL, r["ratio"], "met" if r["met"] else "not met"))
print("\n`gk pack` of the cuda images (choosing bases included): %d ms CPU, %d ms wall "
      "(medians of 3)." % (r["pack_cpu_ms_median"], r["pack_ms_median"]))
PY
