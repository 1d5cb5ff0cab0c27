#!/usr/bin/env python3
"""test_gpu_report.py SRCROOT - bench/gpu_report.py judges the issues' targets right.

No GPU is needed: the measurements are this test's own numbers, written as
gk_bench_gpu and bench/gpu_torch.py write theirs (only the fields the report
reads), chosen on both sides of each limit. What is checked is the judging
and the report, not any kernel.
"""
import json
import os
import subprocess
import sys
import tempfile

root = sys.argv[1]
N, K = 32768, 8192


def q(entry, bits, m, us, copy_ratio=0.0, tflops=0.0):
    return dict(entry=entry, bits=bits, m=m, n=N, k=K, target="sm_90a", us=us, best_us=us,
                runs=3, weight_gbps=copy_ratio * 4000, copy_ratio=copy_ratio, tflops=tflops)


def fa(kind, d, sq, skv, causal, us, copy_ratio=0.0):
    flops = 4 * sq * skv * d * 32 * (0.5 if causal else 1.0)
    return dict(kind=kind, dtype="f16", head_dim=d, sq=sq, skv=skv, causal=causal, heads=32,
                kv_heads=8, target="sm_90a", us=us, best_us=us, runs=3,
                tflops=flops / (us * 1e6), kv_gbps=copy_ratio * 4000, copy_ratio=copy_ratio)


kernels = dict(
    device=dict(name="Test H200", sm="sm_90", driver_version=13000, sms=132,
                sm_clock_khz=1980000, l2_bytes=50 << 20, mem_bytes=141 << 30,
                spec_gbps=4800.0, libgk_device="cuda:sm_90"),
    archive="test.gkfat", quick=False, runs=3,
    copy=dict(bytes=1 << 30, us=500.0, best_us=500.0, runs=3, gbps=4000.0),
    qmatmul=[
        q("qmatmul", 4, 1, 50.0, copy_ratio=0.86),   # met (0.85)
        q("qmatmul", 8, 1, 90.0, copy_ratio=0.80),   # not met (0.85)
        q("qmatmul", 1, 1, 30.0, copy_ratio=0.71),   # met (0.7)
        q("qmatmul", 4, 16, 300.0, tflops=30.0),     # not met: 0.5 x 66.9 = 33.45
        q("qmatmul_q8x", 4, 1, 40.0, copy_ratio=0.91),
        q("qmatmul_q8x", 4, 16, 79.0, copy_ratio=0.46),  # 79 / 40 <= 2: met
        q("qmatmul_q8x", 8, 1, 70.0, copy_ratio=0.92),
        q("qmatmul_q8x", 8, 16, 150.0),                  # 150 / 70 > 2: not met
        q("qmatmul_q8x_x+rec", 4, 16, 81.0),             # 81 / 40 > 2: not met
        q("qmatmul_q8x_x+rec", 8, 16, 139.0),            # 139 / 70 <= 2: met
        q("qmatmul_q8x_x+mm", 4, 4096, 1000.0, tflops=250.0),  # 250 / 700 < 0.4: not met
    ],
    flash_attention=[
        fa("prefill", 128, 4096, 4096, 1, 300.0),   # SDPA 271 us: 0.90x, met at 0.6 and 0.9
        fa("prefill", 128, 4096, 4096, 0, 700.0),   # SDPA 426 us: 0.61x, met at 0.6 only
        fa("decode", 128, 1, 8192, 0, 25.0),        # SDPA 21.5 us: 1.16x <= 1.2, met
        fa("decode", 128, 1, 32768, 0, 60.0, copy_ratio=0.65),  # not met (0.7)
    ],
    paged_attention=[
        dict(seqs=1, len=8192, page=64, target="sm_90a", us=30.0, best_us=30.0, runs=3,
             kv_gbps=2000.0, copy_ratio=0.5),      # 30 / 21.5 > 1.2: not met
        dict(seqs=1, len=32768, page=64, target="sm_90a", us=60.0, best_us=60.0, runs=3,
             kv_gbps=3000.0, copy_ratio=0.75),     # met
    ],
    # the 32768-key decode again with 33 pieces a KV head: no target judged on it
    split=[dict(case="flash_attention decode causal=0,dtype=f16,head_dim=128 sq=1 skv=32768 "
                "h=32/8", pieces=33, pieces_default=128, us=45.0, default_us=60.0,
                kv_gbps=2982.0, copy_ratio=0.73)],
)


def sd(name, us, flops):
    return dict(name=name, us=us, tflops=flops / (us * 1e6))


torch = dict(torch="2.11", cuda="13.0", device="Test H200",
             copy=dict(gbps=4100.0),
             gemm=[dict(m=4096, n=N, k=K, us=1.0, tflops=700.0)],
             sdpa=[sd("prefill d128 sq4096 skv4096 c1", 271.0, 4 * 4096 * 4096 * 128 * 32 * 0.5),
                   sd("prefill d128 sq4096 skv4096 c0", 426.0, 4 * 4096 * 4096 * 128 * 32),
                   sd("decode d128 sq1 skv8192 c0", 21.5, 4 * 8192 * 128 * 32),
                   sd("decode d128 sq1 skv32768 c0", 60.0, 4 * 32768 * 128 * 32)])

with tempfile.TemporaryDirectory() as tmp:
    kp, tp, op = (os.path.join(tmp, f) for f in ("k.json", "t.json", "out.json"))
    json.dump(kernels, open(kp, "w"))
    json.dump(torch, open(tp, "w"))
    md = subprocess.run([sys.executable, os.path.join(root, "bench", "gpu_report.py"), kp, tp, op,
                         "", ""], check=True, capture_output=True, text=True).stdout
    out = json.load(open(op))

verdicts = {t["target"]: t["verdict"] for t in out["targets"]}


def verdict(prefix):
    (hit,) = [v for name, v in verdicts.items() if name.startswith(prefix)]
    return hit


want = {
    "qmatmul m = 1, BITS 4": "**met**",
    "qmatmul m = 1, BITS 8": "not met",
    "qmatmul m = 1, BITS 1": "**met**",
    "qmatmul m = 1, BITS 2": "not measured (no such case in this run)",
    "qmatmul m = 16, BITS 4": "not met",
    "qmatmul_q8x m = 1, BITS 4": "**met**",
    "qmatmul_q8x m = 16, BITS 4": "**met**",
    "qmatmul_q8x m = 16, BITS 8": "not met",
    "qmatmul_q8x_x + _rec m = 16, BITS 4": "not met",
    "qmatmul_q8x_x + _rec m = 16, BITS 8": "**met**",
    "qmatmul_q8x_x + _mm m = 4096": "not met",
    "flash_attention prefill f16 D = 128, 4096 x 4096, causal 1 (sm_90a): TFLOP/s / SDPA's, "
    "with sm_80": "**met**",
    "flash_attention prefill f16 D = 128, 4096 x 4096, causal 1 (sm_90a): TFLOP/s / SDPA's, "
    "with the sm_90a": "**met**",
    "flash_attention prefill f16 D = 128, 4096 x 4096, causal 0 (sm_90a): TFLOP/s / SDPA's, "
    "with sm_80": "**met**",
    "flash_attention prefill f16 D = 128, 4096 x 4096, causal 0 (sm_90a): TFLOP/s / SDPA's, "
    "with the sm_90a": "not met",
    "flash_attention prefill f16 D = 64, 4096 x 4096, causal 0": None,  # two rows, both absent
    "flash_attention decode sq = 1, skv = 8192": "**met**",
    "flash_attention decode sq = 1, skv = 32768": "not met",
    "paged_attention decode, 1 x 8192, pages of 64": "not met",
    "paged_attention decode, 8 x 1024, pages of 64": "not measured (no such case in this run)",
    "paged_attention decode, 1 x 32768, pages of 64": "**met**",
}
bad = 0
for prefix, v in want.items():
    if v is None:
        got = {x for name, x in verdicts.items() if name.startswith(prefix)}
        ok = got == {"not measured (no such case in this run)"}
    else:
        got = verdict(prefix)
        ok = got == v
    if not ok:
        print(f"FAIL: {prefix}: {got!r}, want {v!r}")
        bad += 1
# The peak the m = 16 target is half of: 132 SMs x 128 lanes x 2 x 1.98 GHz.
(m16,) = [t for t in out["targets"] if t["target"].startswith("qmatmul m = 16")]
if abs(m16["limit"] - 0.5 * 132 * 128 * 2 * 1.98e-3) > 1e-6:
    print(f"FAIL: the f32 FMA peak's half is {m16['limit']}")
    bad += 1
if "| 19 | flash_attention decode sq = 1, skv = 8192: time / SDPA's | 1.16 | <= 1.20 x | **met** |" \
        not in md:
    print("FAIL: the decode's row is not in the report:\n" + md)
    bad += 1
if ("| flash_attention decode causal=0,dtype=f16,head_dim=128 sq=1 skv=32768 h=32/8 | 33 (128) "
        "| 45.0 | 2982 (0.73) | 60.0 | **0.75** |") not in md or out.get("split") != kernels["split"]:
    print("FAIL: the split decode's row is not in the report, or not in its JSON:\n" + md)
    bad += 1
if bad:
    sys.exit(1)
print(f"ok: bench/gpu_report.py judged {len(out['targets'])} targets as expected")
