#!/usr/bin/env python3
"""gpu_torch.py KERNELS_JSON OUT_JSON - PyTorch on the shapes gk_bench_gpu
measured (KERNELS_JSON, its output), for bench/gpu.sh to compare with:

- f16 GEMV/GEMM y = x @ W.T (torch.mm, cuBLAS) for each qmatmul (m, n, k),
  W f16 (n x k), 2 bytes per weight;
- its own device-to-device copy bandwidth (Tensor.copy_ of as many bytes as
  gk_bench_gpu copied; bytes read + written);
- scaled_dot_product_attention, f16, for each flash_attention case: with
  enable_gqa=True, and with K/V expanded to the query heads beforehand (the
  faster counts; both are kept).

Timing as gk_bench_gpu's: inputs rotate over copies that together are at
least 4x the card's L2; a batch of calls (about 1 ms of work) captured in a
CUDA graph, so Python's dispatch time is not counted, replayed between two
CUDA events; median of the runs, per call. Writes OUT_JSON.
"""
import json
import math
import statistics
import sys

if __name__ == "__main__" and (len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help")):
    print(__doc__.strip(), file=sys.stdout if len(sys.argv) == 2 else sys.stderr)
    sys.exit(0 if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help") else 2)

import torch  # noqa: E402 (after --help, which needs no PyTorch)


def time_calls(fn, runs):
    """Median and best time of one fn(i) call in microseconds, and how."""
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn(0)
    torch.cuda.synchronize()
    e0.record()
    fn(1)
    e1.record()
    e1.synchronize()
    one = e0.elapsed_time(e1) * 1e3
    batch = 1 if one >= 1000 else 64 if one <= 16 else math.ceil(1000 / one)
    try:
        # Warm-up on a side stream, as torch.cuda.graphs asks before capture.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for i in range(3):
                fn(i)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for i in range(batch):
                fn(i)
        run, how = graph.replay, "cuda graph"
    except Exception as e:  # some op refused capture: time the plain calls
        print(f"gpu_torch.py: no CUDA graph ({e}); timing plain calls", file=sys.stderr)

        def run():
            for i in range(batch):
                fn(i)
        how = "plain calls"
    run()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        e0.record()
        run()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1e3 / batch)
    return dict(us=statistics.median(times), best_us=min(times), batch=batch, timing=how)


def copies_for(nbytes, l2):
    return max(1, min(32, math.ceil(4 * l2 / max(nbytes, 1))))


def main():
    kernels = json.load(open(sys.argv[1]))
    out_path = sys.argv[2]
    runs = kernels["runs"]
    l2 = kernels["device"]["l2_bytes"] or 64 << 20
    torch.manual_seed(0)
    dev = torch.device("cuda")
    result = dict(torch=torch.__version__, cuda=torch.version.cuda,
                  device=torch.cuda.get_device_name(0), gemm=[], sdpa=[])

    nbytes = kernels["copy"].get("bytes") or 1 << 30
    src = torch.ones(nbytes, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    t = time_calls(lambda i: dst.copy_(src), runs)
    result["copy"] = dict(bytes=nbytes, gbps=2 * nbytes / (t["us"] * 1e3), **t)
    del src, dst
    print(f"torch copy: {result['copy']['gbps']:.0f} GB/s", file=sys.stderr)

    for m, n, k in sorted({(c["m"], c["n"], c["k"]) for c in kernels["qmatmul"]}):
        wbytes = n * k * 2
        ws = [torch.randn(n, k, dtype=torch.float16, device=dev) / math.sqrt(k)
              for _ in range(copies_for(wbytes, l2))]
        x = torch.randn(m, k, dtype=torch.float16, device=dev)
        y = torch.empty(m, n, dtype=torch.float16, device=dev)
        t = time_calls(lambda i: torch.mm(x, ws[i % len(ws)].t(), out=y), runs)
        result["gemm"].append(dict(m=m, n=n, k=k, copies=len(ws), weight_gbps=wbytes / (t["us"] * 1e3),
                                   tflops=2 * m * n * k / (t["us"] * 1e6), **t))
        print(f"torch f16 mm m={m} n={n} k={k}: {t['us']:.1f} us", file=sys.stderr)
        del ws, x, y

    sdpa = torch.nn.functional.scaled_dot_product_attention
    for c in kernels["flash_attention"]:
        h, hk, sq, skv, d, causal = (c["heads"], c["kv_heads"], c["sq"], c["skv"], c["head_dim"],
                                     bool(c["causal"]))
        bf16 = c.get("dtype") == "bf16"
        dt = torch.bfloat16 if bf16 else torch.float16
        name = "%s d%d sq%d skv%d c%d%s" % (c["kind"], d, sq, skv, c["causal"], " bf16" if bf16 else "")
        kw = dict(is_causal=causal)
        if causal and sq != skv:  # docs/kernels.md aligns the mask bottom-right
            from torch.nn.attention.bias import causal_lower_right
            kw = dict(attn_mask=causal_lower_right(sq, skv))
        sets = [(torch.rand(1, h, sq, d, dtype=dt, device=dev) * 2 - 1,
                 torch.rand(1, hk, skv, d, dtype=dt, device=dev) * 2 - 1,
                 torch.rand(1, hk, skv, d, dtype=dt, device=dev) * 2 - 1)
                for _ in range(copies_for(2 * (h * sq + 2 * hk * skv) * d, l2))]
        row = dict(name=name, heads=h, kv_heads=hk, sq=sq, skv=skv, head_dim=d, causal=c["causal"])
        try:
            row["gqa"] = time_calls(lambda i: sdpa(*sets[i % len(sets)], enable_gqa=True, **kw), runs)
        except Exception as e:  # PyTorch before 2.5 has no enable_gqa
            row["gqa_error"] = str(e)
        rep = h // hk
        sets = [(q, kk.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1))
                for q, kk, v in sets]
        row["expanded"] = time_calls(lambda i: sdpa(*sets[i % len(sets)], **kw), runs)
        row["us"] = min(r["us"] for r in (row.get("gqa"), row["expanded"]) if r)
        flops = 4 * sq * skv * d * h * (0.5 if causal else 1.0)
        row["tflops"] = flops / (row["us"] * 1e6)
        result["sdpa"].append(row)
        print(f"torch sdpa {name}: {row['us']:.1f} us", file=sys.stderr)
        del sets

    with open(out_path, "w") as f:
        json.dump(result, f, indent=2, sort_keys=True)


if __name__ == "__main__":
    main()
