#!/bin/sh
# gpu.sh BUILD_DIR WORK_DIR - the cuda kernels on this machine's NVIDIA GPU
# against the card's device-to-device copy bandwidth and PyTorch (issue 18),
# all measured in this run.
#
# Runs BUILD_DIR/bench/gk_bench_gpu (bench/gpu.c) on the archive
# $GK_GPU_ARCHIVE (default BUILD_DIR/test-out-cuda/cuda.gkfat, the cuda test
# archive); builds nothing. Then, when `import torch` works and sees the
# GPU, bench/gpu_torch.py on the same shapes: f16 GEMV/GEMM (cuBLAS), its own
# copy bandwidth, scaled_dot_product_attention. Prints a markdown section
# and writes WORK_DIR/gpu.json; without a GPU the section says so, gpu.json
# is {"skipped": "why"}, and the exit status is 0. GK_BENCH_GPU_ARGS passes
# options to gk_bench_gpu (--quick in tests); GK_GPU_LIB_PATH is prepended
# to LD_LIBRARY_PATH for gk_bench_gpu alone (libraries carried to a GPU
# machine must not reach PyTorch).
set -eu
case ${1:-} in -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ $# -eq 2 ] || { echo "usage: bench/gpu.sh BUILD_DIR WORK_DIR (see --help)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=$1 work=$2
bench=$build/bench/gk_bench_gpu
[ -x "$bench" ] || { echo "bench/gpu.sh: $bench missing: build the project first (ci/configure.sh $build)" >&2; exit 1; }
mkdir -p "$work"
archive=${GK_GPU_ARCHIVE:-$build/test-out-cuda/cuda.gkfat}
rm -f "$work/gpu-kernels.json" "$work/gpu-torch.json"
# shellcheck disable=SC2086 # GK_BENCH_GPU_ARGS is a list of options
LD_LIBRARY_PATH="${GK_GPU_LIB_PATH:+$GK_GPU_LIB_PATH:}${LD_LIBRARY_PATH:-}" \
  "$bench" "$archive" --json "$work/gpu-kernels.json" ${GK_BENCH_GPU_ARGS:-}
torch_note=""
if python3 -c 'import json, sys; sys.exit("skipped" in json.load(open(sys.argv[1])))' \
     "$work/gpu-kernels.json"; then
  if python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
    echo "bench/gpu.sh: PyTorch on the same shapes ..." >&2
    python3 "$root/bench/gpu_torch.py" "$work/gpu-kernels.json" "$work/gpu-torch.json" ||
      torch_note="bench/gpu_torch.py failed (see stderr)"
  else
    torch_note="PyTorch with CUDA not available here (python3 -c 'import torch')"
  fi
fi
nvsmi=""
command -v nvidia-smi >/dev/null 2>&1 &&
  nvsmi=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1 || true)

python3 - "$work/gpu-kernels.json" "$work/gpu-torch.json" "$work/gpu.json" "$torch_note" "$nvsmi" <<'PY'
import datetime, json, os, sys
kpath, tpath, out_path, torch_note, nvsmi = sys.argv[1:6]
k = json.load(open(kpath))
print("## GPU kernels against the card's copy bandwidth and PyTorch (issue 18)")
print()
if "skipped" in k:
    print(f"No NVIDIA GPU here: {k['skipped']}. Nothing was measured.")
    json.dump({"skipped": k["skipped"]}, open(out_path, "w"), indent=2)
    sys.exit(0)
t = json.load(open(tpath)) if os.path.exists(tpath) else None
dev = k["device"]
drv = dev["driver_version"]
date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
copy = k["copy"]["gbps"]
print(f"{dev['name']} ({dev['sm']}, {dev['sms']} SMs, L2 {dev['l2_bytes'] >> 20} MiB, "
      f"{dev['mem_bytes'] / 2**30:.0f} GiB), driver {drv // 1000}.{drv % 1000 // 10}"
      + (f" (nvidia-smi: {nvsmi})" if nvsmi else "") + f", {date}. Archive `{k['archive']}`"
      + (", **--quick shapes**" if k["quick"] else "") + ".")
print()
print(f"- Copy bandwidth (`cuMemcpyDtoDAsync` of {k['copy'].get('bytes', 0) >> 20} MiB, bytes "
      f"read + written): **{copy:.0f} GB/s**"
      + (f"; PyTorch's `copy_` {t['copy']['gbps']:.0f} GB/s" if t else "")
      + (f"; the data sheet's {dev['spec_gbps']:.0f} GB/s (2 x memory clock x bus width)"
         if dev.get("spec_gbps") else "") + ".")
print(f"- Times are per launch: median of {k['runs']} runs, each a batch of launches back to "
      "back between two CUDA events (about 1 ms of work, at least one launch), inputs rotating "
      "over copies that together are at least 4x L2, so weights come from memory. "
      "**vs PyTorch** = PyTorch's time / ours (above 1: ours is faster)"
      + (f"; PyTorch {t['torch']} (CUDA {t['cuda']}), f16, CUDA graphs of the same batches."
         if t else f"; {torch_note or 'no PyTorch numbers'}."))
print()
gemm = {(g["m"], g["n"], g["k"]): g for g in (t or {}).get("gemm", [])}
sdpa = {s["name"]: s for s in (t or {}).get("sdpa", [])}
print("qmatmul (W in docs/weights.md's blocks: 32 weights per 4 + 4*BITS bytes; x, y f32); "
      "PyTorch: f16 `x @ W.T` (cuBLAS) with W f16, 2 bytes per weight.")
print()
print("| bits | m | n | k | entry | image | us | W GB/s | of copy | TFLOP/s | PyTorch f16 us | vs PyTorch |")
print("|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|")
rows = []
for c in k["qmatmul"]:
    g = gemm.get((c["m"], c["n"], c["k"]))
    if g:
        c["torch_us"] = g["us"]
        c["vs_torch"] = g["us"] / c["us"]
    rows.append(c)
    print(f"| {c['bits']} | {c['m']} | {c['n']} | {c['k']} | {c['entry']} | {c['target']} | "
          f"{c['us']:.1f} | {c['weight_gbps']:.0f} | **{c['copy_ratio']:.2f}** | "
          f"{c['tflops']:.2f} | " + (f"{g['us']:.1f} | **{c['vs_torch']:.2f}**" if g else " | ")
          + " |")
print()
print("flash_attention, 32 query / 8 KV heads (FLOPs 4 x sq x skv x D x heads, halved when "
      "causal); PyTorch: `scaled_dot_product_attention` of the same dtype, the faster of "
      "`enable_gqa=True` and K/V expanded to 32 heads beforehand.")
print()
print("| case | dtype | D | sq x skv | causal | image | us | TFLOP/s | K+V GB/s (of copy) | PyTorch us | PyTorch TFLOP/s | vs PyTorch |")
print("|---|---|---:|---|---:|---|---:|---:|---|---:|---:|---:|")
for c in k["flash_attention"]:
    dt = c.get("dtype", "f16")
    name = "%s d%d sq%d skv%d c%d%s" % (c["kind"], c["head_dim"], c["sq"], c["skv"], c["causal"],
                                        " bf16" if dt == "bf16" else "")
    s = sdpa.get(name)
    if s:
        c["torch_us"], c["vs_torch"] = s["us"], s["us"] / c["us"]
    bw = f"{c['kv_gbps']:.0f} ({c['copy_ratio']:.2f})" if c["kind"] == "decode" else ""
    print(f"| {c['kind']} | {dt} | {c['head_dim']} | {c['sq']} x {c['skv']} | {c['causal']} | "
          f"{c['target']} | {c['us']:.1f} | {c['tflops']:.2f} | {bw} | "
          + (f"{s['us']:.1f} | {s['tflops']:.1f} | **{c['vs_torch']:.2f}**" if s else " | | ")
          + " |")
print()
print("paged_attention f16 decode (sq = 1), 32 query / 8 KV heads, head_dim 128, pages scattered "
      "over the pool in random order; PyTorch: SDPA's decode of one sequence of skv = 8192 "
      "(the same total context, contiguous).")
print()
print("| page | sequences x length | image | us | K+V GB/s (of copy) | SDPA decode us | vs SDPA |")
print("|---:|---|---|---:|---|---:|---:|")
dec = next((s for s in sdpa.values() if s["name"].startswith("decode d128")), None)
for c in k.get("paged_attention", []):
    if dec:
        c["sdpa_us"], c["vs_sdpa"] = dec["us"], dec["us"] / c["us"]
    print(f"| {c['page']} | {c['seqs']} x {c['len']} | {c['target']} | {c['us']:.1f} | "
          f"{c['kv_gbps']:.0f} ({c['copy_ratio']:.2f}) | "
          + (f"{dec['us']:.1f} | **{c['vs_sdpa']:.2f}**" if dec else " | ") + " |")
result = dict(device=dev, date=date, nvidia_smi=nvsmi, archive=k["archive"], quick=k["quick"],
              runs=k["runs"], copy=k["copy"], qmatmul=rows, flash_attention=k["flash_attention"],
              paged_attention=k.get("paged_attention", []), torch=t,
              torch_note=torch_note or None)
with open(out_path + ".tmp", "w") as f:
    json.dump(result, f, indent=2, sort_keys=True)
os.replace(out_path + ".tmp", out_path)
PY
