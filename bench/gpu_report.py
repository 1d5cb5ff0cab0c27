#!/usr/bin/env python3
"""gpu_report.py KERNELS_JSON TORCH_JSON OUT_JSON TORCH_NOTE NVSMI - bench/gpu.sh's report.

Reads gk_bench_gpu's JSON (bench/gpu.c) and, where it exists, bench/gpu_torch.py's
(TORCH_JSON), prints the markdown section (the tables and the issues' targets, each
judged on this run's numbers) and writes OUT_JSON atomically. TORCH_NOTE says why
there are no PyTorch numbers, NVSMI is nvidia-smi's line (both may be empty).
tests/bench/test_gpu_report.py feeds it numbers of its own to check the judging.
"""
import datetime, json, os, re, sys
if len(sys.argv) != 6 or sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip(), file=sys.stdout if len(sys.argv) == 2 else sys.stderr)
    sys.exit(0 if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help") else 2)
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
      "over the pool in random order; PyTorch: SDPA's decode of one sequence of the same total "
      "context, contiguous.")
print()
print("| page | sequences x length | image | us | K+V GB/s (of copy) | SDPA decode us | vs SDPA |")
print("|---:|---|---|---:|---|---:|---:|")
for c in k.get("paged_attention", []):
    dec = sdpa.get("decode d128 sq1 skv%d c0" % (c["seqs"] * c["len"]))
    if dec:
        c["sdpa_us"], c["vs_sdpa"] = dec["us"], dec["us"] / c["us"]
    print(f"| {c['page']} | {c['seqs']} x {c['len']} | {c['target']} | {c['us']:.1f} | "
          f"{c['kv_gbps']:.0f} ({c['copy_ratio']:.2f}) | "
          + (f"{dec['us']:.1f} | **{c['vs_sdpa']:.2f}**" if dec else " | ") + " |")

split = k.get("split", [])
if split:
    print()
    print("The decodes above take the workspace docs/kernels.md advises: one piece a unit (sequence x "
          "KV head) per 256 keys, but no more than give each of the card's blocks one (two an SM). "
          "Here those where that is fewer, timed again with one piece per 256 keys (above 1: the "
          "default's fewer, longer pieces are faster).")
    print()
    print("| case | pieces a unit (default) | us | K+V GB/s (of copy) | default us | time / default |")
    print("|---|---:|---:|---|---:|---:|")
    for c in split:
        print(f"| {c['case']} | {c['pieces']} ({c['pieces_default']}) | {c['us']:.1f} | "
              f"{c['kv_gbps']:.0f} ({c['copy_ratio']:.2f}) | {c['default_us']:.1f} | "
              f"**{c['us'] / c['default_us']:.2f}** |")

# The issues' targets, each against what this run measured (issue 18's and
# 19's "Done when"): met, not met, or why it could not be judged here.
targets = []
def judge(issue, what, value, limit, unit, higher=True, note="no such case in this run"):
    if value is None:
        verdict = "not measured" + (f" ({note})" if note else "")
    else:
        verdict = "**met**" if (value >= limit if higher else value <= limit) else "not met"
    targets.append(dict(issue=issue, target=what, value=value, limit=limit, unit=unit,
                        higher=higher, verdict=verdict))
def qcase(entry, bits, m):
    return next((c for c in rows if c["entry"] == entry and c["bits"] == bits and c["m"] == m
                 and c["n"] == 32768 and c["k"] == 8192), None)
def val(c, key):
    return c.get(key) if c else None
cc = re.match(r"sm_(\d+)(\d)", dev["sm"])
major, minor = (int(cc.group(1)), int(cc.group(2))) if cc else (0, 0)
lanes = 64 if (major, minor) in ((7, 5), (8, 0)) else 128  # f32 FMA lanes an SM
peak = dev["sms"] * lanes * 2 * dev.get("sm_clock_khz", 0) * 1e3 / 1e12
for bits in (4, 8, 2, 1):
    judge(18, f"qmatmul m = 1, BITS {bits}: W bytes/s of copy", val(qcase("qmatmul", bits, 1), "copy_ratio"),
          0.85 if bits >= 4 else 0.7, "of copy")
judge(18, f"qmatmul m = 16, BITS 4: f32 TFLOP/s, >= 0.5 of the FMA peak ({peak:.1f} TFLOP/s: "
      f"{dev['sms']} SMs x {lanes} lanes x 2 x {dev.get('sm_clock_khz', 0) / 1e6:.2f} GHz)",
      val(qcase("qmatmul", 4, 16), "tflops"), 0.5 * peak, "TFLOP/s",
      note="no such case in this run" if peak else "no SM clock")
for bits in (4, 8, 2, 1):
    one, sixteen = qcase("qmatmul_q8x", bits, 1), qcase("qmatmul_q8x", bits, 16)
    judge(18, f"qmatmul_q8x m = 1, BITS {bits}: W bytes/s of copy", val(one, "copy_ratio"), 0.9,
          "of copy")
    judge(18, f"qmatmul_q8x m = 16, BITS {bits}: time / m = 1's", sixteen["us"] / one["us"]
          if one and sixteen else None, 2.0, "x", higher=False)
    # The same bits from x rounded once (qmatmul_q8x_x + _rec), the rounding
    # timed with it: against qmatmul_q8x's m = 1 (x rounded in the call).
    rec = qcase("qmatmul_q8x_x+rec", bits, 16)
    if rec:
        judge(18, f"qmatmul_q8x_x + _rec m = 16, BITS {bits}: time / qmatmul_q8x m = 1's",
              rec["us"] / one["us"] if one else None, 2.0, "x", higher=False)
for c in rows:
    if c["entry"] == "qmatmul_q8x_x+mm" and c["m"] >= 256:
        g = gemm.get((c["m"], c["n"], c["k"]))
        judge(18, f"qmatmul_q8x_x + _mm m = {c['m']}, n = {c['n']}, k = {c['k']}, BITS "
              f"{c['bits']}: TFLOP/s / PyTorch f16 GEMM's", c["tflops"] / g["tflops"] if g else None,
              0.4, "x", note="no PyTorch")
def fcase(kind, d, sq, skv, causal):
    return next((c for c in k["flash_attention"] if c["kind"] == kind and c["head_dim"] == d
                 and c["sq"] == sq and c["skv"] == skv and c["causal"] == causal
                 and c.get("dtype", "f16") == "f16"), None)
def no_case(c):
    return "no such case in this run" if c is None else "no PyTorch"
for d in (128, 64):
    for causal in (0, 1):
        c = fcase("prefill", d, 4096, 4096, causal)
        for limit, code in ((0.6, "sm_80-style code"), (0.9, "the sm_90a image")):
            judge(19, f"flash_attention prefill f16 D = {d}, 4096 x 4096, causal {causal}"
                  + (f" ({c['target']})" if c else "") + f": TFLOP/s / SDPA's, with {code}",
                  val(c, "vs_torch"), limit, "x", note=no_case(c))
c = fcase("decode", 128, 1, 8192, 0)
judge(19, "flash_attention decode sq = 1, skv = 8192: time / SDPA's",
      1 / c["vs_torch"] if c and c.get("vs_torch") else None, 1.2, "x", higher=False,
      note=no_case(c))
c = fcase("decode", 128, 1, 32768, 0)
judge(19, "flash_attention decode sq = 1, skv = 32768: K+V bytes/s of copy", val(c, "copy_ratio"),
      0.7, "of copy", note=no_case(c))
paged = k.get("paged_attention", [])
for seqs, length, page in ((1, 8192, 64), (8, 1024, 64), (1, 8192, 16), (8, 1024, 16)):
    c = next((c for c in paged if (c["seqs"], c["len"], c["page"]) == (seqs, length, page)), None)
    judge(19, f"paged_attention decode, {seqs} x {length}, pages of {page}: time / SDPA's decode "
          "of skv = 8192", 1 / c["vs_sdpa"] if c and c.get("vs_sdpa") else None, 1.2, "x",
          higher=False, note=no_case(c))
c = next((c for c in paged if (c["seqs"], c["len"], c["page"]) == (1, 32768, 64)), None)
judge(19, "paged_attention decode, 1 x 32768, pages of 64: K+V bytes/s of copy",
      val(c, "copy_ratio"), 0.7, "of copy", note=no_case(c))
print()
print("Targets of issues 18 and 19 (their \"Done when\"), judged on this run's numbers alone:")
print()
print("| issue | target | measured | limit | verdict |")
print("|---:|---|---:|---:|---|")
for t_ in targets:
    v = "" if t_["value"] is None else f"{t_['value']:.2f}"
    print(f"| {t_['issue']} | {t_['target']} | {v} | {'>=' if t_['higher'] else '<='} "
          f"{t_['limit']:.2f} {t_['unit']} | {t_['verdict']} |")
result = dict(device=dev, date=date, nvidia_smi=nvsmi, archive=k["archive"], quick=k["quick"],
              runs=k["runs"], copy=k["copy"], qmatmul=rows, flash_attention=k["flash_attention"],
              paged_attention=k.get("paged_attention", []), split=split, targets=targets, torch=t,
              torch_note=torch_note or None)
with open(out_path + ".tmp", "w") as f:
    json.dump(result, f, indent=2, sort_keys=True)
os.replace(out_path + ".tmp", out_path)
