#!/bin/sh
# test_ptxas.sh SRCDIR: what ptxas says of the tensor-core kernels, where
# no GPU is needed to hear it. Every f16/bf16 variant of flash_attention
# and paged_attention is compiled for sm_90a with the wgmma prefill
# (-DGK_FA_WGMMA=1, fa_wgmma.cuh), those of flash_attention also as the
# warp-specialized image (-DGK_FA_WGMMA=2: blocks of 384, 168 registers a
# thread that setmaxnreg moves from the producer to the consumers, which
# spill without it) and its overlapped twins (-DGK_FA_WGMMA=3: P of a tile
# held while S of the next is computed; -DGK_FA_WGMMA=4: the same with Q in
# shared memory, 128-key tiles causal and 176 not (192 at head_dim 64),
# consumers at 232 registers and the producer at 32; and, f16, with its
# producer loading by TMA: -DGK_FA_TMA=1), and the default images
# of attention and qmatmul (head_dim 128; BITS 1, 4 and 8) for sm_75, sm_80
# and sm_90a (there the prefill keeps Q in shared memory, at 252-255
# registers), as the recipes' nvcc.lua does (-O3 -std=c++17); then the
# sm_90a images as shipped (64-key tiles, a decode's ring of 4), ci/gpu's
# prefill diagnoses (wsnosoft, wsbare), dec6 and qmatmul experiments
# (sm_90a) and the other default targets (sm_86 to sm_120: qmatmul, and
# attention at head_dim 128); it fails on:
# - C7520 "wgmma.mma_async instructions are serialized" (or any other
#   "Potential Performance Loss"): each wgmma waited on before the next;
#   C7508 "'setmaxnreg' ignored" among them (a kernel with no register cap
#   at its entry: without its __launch_bounds__, wgmma5's said so and took
#   217 registers a thread, so no block of 384 could start);
# - C7519 "warpgroup.arrive is injected ... by compiler": registers a wgmma
#   reads written after the wgmma.fence (the cause of C7520 before);
# - register spills (past SPILL_OK where a check names a known one);
# - qmatmul's m = 1 loop (sm_90a) issuing more than its bound a weight: the
#   straight run of machine code holding two steps' fmaf (sass_mix.py),
#   against 5.6 instructions a weight (2.9 at BITS 1, 4.7 at 2). The f32
#   contract takes 4 (2 at BITS 1: a select and the fmaf); ptxas 13.0 gives
#   5.28 to 5.5 (BITS 1 2.74, 2 4.45: a whole block a lane,
#   qmatmul_blk.cuh), where the loop of 64-bit index arithmetic and a branch
#   a row before gave 6.3 to 11.6, a runtime offset to each code word (one
#   pointer a row of W) 5.5 to 5.75, and BITS 1 and 2 in octets 3.84 and
#   5.34 (docs/gpu-speed.md). A newer nvcc may lay the loop
#   out otherwise: the message says what was found;
# - qmatmul_q8x_mm's trip (sm_90a: the copy of a whole stage, 3 + BITS + 1
#   cp.async a thread, and a stage's 2 blocks of k against a group's 64 x
#   32 corner of y, one straight run) issuing more than 6.25 instructions
#   an output a block: the definition's epilogue takes 4 (docs/weights.md);
#   ptxas 13.0 gives 5.66 to 6.03 since the copy's pieces are in row-major
#   order (coalesced, 13 to 40% faster on an H200: docs/gpu-speed.md), where
#   2 threads a row took 5.31 to 5.64 (a 647 to 687 stage, a 27 to 35 copy
#   beside it) and the 32 x 32 corners before 5.77 to 6.36 without the copy;
#   and the ring of 4 trips not unrolled (one run a trip), or its trips
#   over 5.5 an output a block on average: ptxas 13.0 gives 5.18 to 5.42
#   unrolled (a slot index known in each trip), 5.66 to 6.03 before;
# - qmatmul_q8x's m = 1 trip (sm_90a, gk_q8x_vec) without a whole step's
#   loads of W (4 rows x 1 + BITS words) beside each step's dp4a in its
#   straight runs, without its whole ring of sets (8 steps at BITS 1, 4 at
#   2, 2 at 4 and 8: q8x.cuh's GK_Q8X_SETS), or over 1.3 instructions a
#   weight: ptxas 13.0 gives one run of the ring at BITS 1, 2 and 4 (1124
#   instructions for 1024 weights, 572 for 512, 295 for 256), two runs at
#   BITS 8 (232 for 256); two sets at every BITS took 297 to 305 for 256,
#   and the tile before them, a branch a row of W, had 1 + BITS loads in
#   each row's run (0.49 of copy on an H200, latency-bound);
# - the int8 entries' batch tile (sm_90a, qmatmul_q8x and qmatmul_q8x_rec)
#   without a whole stage's 8 mma in one straight run for each of its 2
#   buffers, or over 330 instructions for one besides the next stage's
#   copies the run holds (23 a cp.async: ptxas 13.0 gives 244 to 316, W
#   as the mma's A since 2026-12-03; x as A, 2026-12-02, 312 to 372), or
#   more than 16 conversions of W's binary16 scales in it;
# - the split decode's merge (sm_90a) without 16 slots' loads in one
#   straight run, or over 24 instructions a slot (ptxas 13.0: 333 for 16,
#   where 8 slots of 4-byte loads at addresses computed a slot took 212);
# - qmatmul's m > 1 tile (sm_90a, a whole tile of 8 rows of x) issuing more
#   than 1.8 instructions a product's fmaf (1.65 at BITS 1) a step: ptxas
#   13.0 gives 1.74 to 1.77 (for 4 columns of a block: 1.49 at BITS 1, 1.66
#   at 2), where the step that branched around each row of x gave 2.1 (545
#   for 256 at BITS 4);
# - ci/gpu's prefill diagnoses (-DGK_FA_ABLATE) still holding the
#   softmax's exponentials, or, without copies, as many cp.async as
#   without softmax alone.
# Exit 77 (SKIP) without nvcc.
set -u
SRC=$1
# shellcheck source=tests/backends/cuda/nvcc.sh
. "$(dirname "$0")/nvcc.sh"
if [ -z "$nvcc" ]; then
  echo "$nvcc_skip"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0 n=0
check() { # ARCH NAME FLAGS...: compile SRC/NAME.cu for ARCH with FLAGS, judge ptxas's words
  arch=$1 name=$2; shift 2
  what="$name.cu $arch $*"
  if ! "$nvcc" -cubin -arch="$arch" -O3 -std=c++17 -Xptxas -v "$@" \
       -o "$T/out.cubin" "$SRC/$name.cu" >"$T/log" 2>&1; then
    echo "FAIL: nvcc $what:"; cat "$T/log"; failures=$((failures + 1)); return
  fi
  n=$((n + 1))
  if grep -E "Performance Loss|C7519|C7520" "$T/log" >/dev/null; then
    echo "FAIL: $what:"; grep -E "Performance Loss|C75" "$T/log"; failures=$((failures + 1))
  fi
  # SPILL_OK="STORES LOADS": the bytes a known spill may reach (none else).
  if ! grep "spill" "$T/log" | awk -v ok="${SPILL_OK:-0 0}" \
       'BEGIN { split(ok, m, " ") } { if ($5 + 0 > m[1] + 0 || $9 + 0 > m[2] + 0) bad = 1 }
        END { exit bad }'; then
    echo "FAIL: $what spills registers${SPILL_OK:+ past $SPILL_OK bytes}:"; grep "spill" "$T/log"
    failures=$((failures + 1))
  fi
}
# mix_check BITS KERNEL: the Python check on stdin, given BITS and the JSON
# of sass_mix.py's runs (every length) of KERNEL in $T/out.cubin; a failure
# counts one.
mix_check() {
  python3 "$(dirname "$0")/sass_mix.py" "$T/out.cubin" "$2" --json --min 1 >"$T/mix.json" &&
    python3 - "$1" "$T/mix.json" || failures=$((failures + 1))
}
# fa_merge: the last block's merge of a split decode (gk_fa_split_merge) in
# $T/out.cubin (flash_attention, sm_90a, head_dim 128): 32 slots a straight
# run, a lane's outputs in two 8-byte loads a slot (64 in flight together)
# weighted by the slot's weight and sum handed over by 2 shuffles (160
# FFMA: 4 outputs and the sum a slot), within 20 instructions a slot
# (ptxas 13.0: 325; where each slot's max and sum were loaded beside its
# outputs, 16 slots took 333).
fa_merge() {
  mix_check 0 flash_attention <<'PY'
import json, sys
mix = json.load(open(sys.argv[2]))
runs = [r for r in mix["runs"] if r["mix"].get("LDG", 0) >= 64 and r["mix"].get("FFMA", 0) >= 160]
what = "flash_attention.cu sm_90a: the split's merge"
if not runs:
    print(f"FAIL: {what}: no straight run of 32 slots (64 loads, 160 FFMA); runs with loads: "
          + "; ".join(f"{r['length']} with {r['mix'].get('LDG', 0)} loads, "
                      f"{r['mix'].get('FFMA', 0)} FFMA" for r in mix["runs"]
                      if r["mix"].get("LDG", 0) >= 16))
    sys.exit(1)
n = min(r["length"] for r in runs)
if n > 20 * 32:
    print(f"FAIL: {what}: {n} instructions for 32 slots, over 20 a slot")
    sys.exit(1)
print(f"ok: {what}: 32 slots in a run of {n}, {runs[0]['mix']['LDG']} loads")
# The two-level merge's first level (gk_fa_merge_batch, a speculative
# decode's groups of up to 8 slots): a batch of 2 rows issues its 36 loads
# (8 slots' outputs, 2 loads each, and a slot's max and sum, a row) in one
# straight run before the first product, so that a batch is one round trip
# (ptxas 13.0: a run of 151 with the 36 loads and no FFMA).
what = "flash_attention.cu sm_90a: the two-level merge's batch"
if not [r for r in mix["runs"] if r["mix"].get("LDG", 0) >= 36 and not r["mix"].get("FFMA", 0)]:
    print(f"FAIL: {what}: no straight run of 36 loads before the products")
    sys.exit(1)
print(f"ok: {what}: 36 loads in one run")
PY
}
# qm_loop BITS: the bounds above on $T/out.cubin (qmatmul, sm_90a, BITS).
qm_loop() {
  python3 "$(dirname "$0")/sass_mix.py" "$T/out.cubin" qmatmul --json >"$T/mix.json" &&
    python3 - "$1" "$T/mix.json" <<'PY' || failures=$((failures + 1))
import json, sys
bits, mix = int(sys.argv[1]), json.load(open(sys.argv[2]))
# Two steps of the m = 1 loop: a lane's 4 rows of W x 8 weights (the octets
# of BITS 4 and 8) or x a whole block of 32 (BITS 1 and 2: qmatmul_blk.cuh),
# two fmaf each (the weight's and the product's); BITS 1, one each, and each
# block's two weights (one of them an fmaf by the register zero).
weights = 2 * 4 * (32 if bits <= 2 else 8)
ffma = weights + 2 * 4 if bits == 1 else 2 * weights
bound = {1: 2.9, 2: 4.7}.get(bits, 5.6) * weights
loops = [r for r in mix["runs"] if r["mix"].get("FFMA", 0) == ffma]
if not loops:
    print(f"FAIL: qmatmul.cu sm_90a -DBITS={bits}: no straight run of {ffma} FFMA (the m = 1 "
          "loop's two steps); runs: "
          + "; ".join(f"{r['length']} with {r['mix']['FFMA']} FFMA" for r in mix["runs"]
                      if r["mix"].get("FFMA", 0) >= 8))
    sys.exit(1)
r = max(loops, key=lambda r: r["length"])  # the main loop; the tail loads no next step
what = f"qmatmul.cu sm_90a -DBITS={bits}: the m = 1 loop issues {r['length']} instructions " \
       f"for {weights} weights a lane ({r['length'] / weights:.2f} a weight)"
if r["length"] > bound:
    print(f"FAIL: {what}, over {bound / weights} a weight: {r['mix']}")
    sys.exit(1)
print(f"ok: {what}")
# The m > 1 tile's step (a whole tile of 8 rows of x, one straight run): the
# octets' 4 rows of W x 8 weights x 8 rows of x and the decode's fmaf; BITS 1
# and 2, 4 columns of the lane's block at a time (128 products) and their 16
# weights' fmaf (BITS 1: the 4 rows' fmaf(d, 1, m) again, which ptxas
# recomputes rather than spill).
prod = 4 * 8 * (4 if bits <= 2 else 8)
ffma = prod + {1: 4, 2: 16}.get(bits, 32)
bound = (1.65 if bits == 1 else 1.8) * prod
tiles = [r for r in mix["runs"] if r["mix"].get("FFMA", 0) == ffma
         and (bits != 1 or r["mix"].get("FSEL", 0) == 16)]  # not m = 1's last step
what = f"qmatmul.cu sm_90a -DBITS={bits}: the m > 1 tile's step" + (" (4 columns of it)" if bits <= 2 else "")
if not tiles:
    print(f"FAIL: {what}: no straight run of {ffma} FFMA (a whole tile's step, with no branch "
          "a row of x)")
    sys.exit(1)
r = max(tiles, key=lambda r: r["length"])
if r["length"] > bound:
    print(f"FAIL: {what} issues {r['length']} instructions for {prod} products, over {bound:.0f}: "
          f"{r['mix']}")
    sys.exit(1)
print(f"ok: {what} issues {r['length']} instructions for {prod} products "
      f"({prod / r['length']:.2f} of them fmaf of the products)")
PY
  mix_check "$1" qmatmul_q8x_mm <<'PY'
import json, sys
bits, mix = int(sys.argv[1]), json.load(open(sys.argv[2]))
pieces = 3 + 1 + bits  # a thread's cp.async a stage: 3 of x, Bits + 1 words of W
# A trip: the copy of a stage and a stage's blocks (2) against the group's
# 64 x 32 corner, a lane's 64 outputs, 2 fmaf each a block, in one run.
ob = 2 * 64
runs = [r for r in mix["runs"] if r["mix"].get("FFMA", 0) == 2 * ob]
what = f"qmatmul.cu sm_90a -DBITS={bits}: qmatmul_q8x_mm's trip"
if not runs:
    print(f"FAIL: {what}: no straight run of {2 * ob} FFMA (2 blocks of a 64 x 32 corner)")
    sys.exit(1)
for r in runs:
    if r["mix"].get("LDGSTS", 0) != pieces:
        print(f"FAIL: {what}: {r['mix'].get('LDGSTS', 0)} cp.async in a trip, not the copy's "
              f"{pieces} (gk_q8m_load_full): {r['mix']}")
        sys.exit(1)
r = max(runs, key=lambda r: r["length"])
if r["length"] > 6.25 * ob:
    print(f"FAIL: {what} issues {r['length']} instructions for {ob} outputs of a block, over "
          f"{6.25 * ob:.0f} (the definition's floor is 4 an output): {r['mix']}")
    sys.exit(1)
# The ring of 4 stages (sm_80 and newer), one trip a slot (gk_q8m_ring).
avg = sum(r["length"] for r in runs) / len(runs)
if len(runs) != 4 or avg > 5.5 * ob:
    print(f"FAIL: {what}: {len(runs)} trips of {[r['length'] for r in runs]} instructions, not "
          f"the ring's 4 unrolled within {5.5 * ob:.0f} on average (gk_q8m_ring)")
    sys.exit(1)
print(f"ok: {what}: {len(runs)} trips of {[r['length'] for r in runs]} instructions for {ob} "
      f"outputs of a block and {pieces} cp.async each ({avg / ob:.2f} an output on average)")
PY
  mix_check "$1" qmatmul_q8x <<'PY'
import json, sys
bits, mix = int(sys.argv[1]), json.load(open(sys.argv[2]))
# qmatmul_q8x at m = 1 (gk_q8x_vec): a step is a lane's block of each of 4
# rows of W, 1 + Bits words a row, 8 dp4a a row. Its trip (the ring of
# GK_Q8X_SETS steps) must hold a whole step's loads beside each step's dp4a
# in its straight runs (the step Sets - 1 on, issued before this one's
# words are used), and issue at most 1.3 instructions a weight.
loads, dp4a = 4 * (1 + bits), 4 * 8
sets = {1: 8, 2: 4, 4: 2, 8: 2}[bits]
trip = [r for r in mix["runs"] if r["mix"].get("IDP4A", 0) >= dp4a
        and r["mix"]["IDP4A"] % dp4a == 0
        and r["mix"].get("LDG", 0) >= loads * r["mix"]["IDP4A"] // dp4a]
what = f"qmatmul.cu sm_90a -DBITS={bits}: qmatmul_q8x's m = 1 trip"
if sum(r["mix"]["IDP4A"] for r in trip) != sets * dp4a:
    print(f"FAIL: {what}: not {sets} steps' {sets * dp4a} dp4a in straight runs, each "
          f"step's beside {loads} loads (those of a step {sets - 1} on); runs with dp4a: "
          + "; ".join(f"{r['length']} with {r['mix']['IDP4A']} dp4a, {r['mix'].get('LDG', 0)} "
                      "loads" for r in mix["runs"] if r["mix"].get("IDP4A", 0) >= 8))
    sys.exit(1)
n = sum(r["length"] for r in trip)
weights = 4 * sum(r["mix"]["IDP4A"] for r in trip)
if n > 1.3 * weights:
    print(f"FAIL: {what} issues {n} instructions for {weights} weights, over 1.3 a weight: "
          + "; ".join(str(r["mix"]) for r in trip))
    sys.exit(1)
print(f"ok: {what}: {n} instructions for {weights} weights ({n / weights:.2f} a weight), "
      f"{sum(r['mix']['LDG'] for r in trip)} loads")
PY
  # The batch tile (q8x_batch.cuh) in both int8 entries: a whole stage's 4
  # blocks a warp, 2 mma tiles each, in one straight run (no branch between
  # the blocks: gk_q8b_stage_mul), one for each buffer of the ring, within
  # 330 instructions (48 a block the definition's epilogue) besides the next
  # stage's copies that the run begins with, counted at 23 a cp.async
  # (LDGSTS: x's 4 pieces and their addresses are 90 in the run before it
  # where a branch ends that one), and 16 conversions of W's binary16 scales
  # (HADD2.F32) a run: with W as the mma's A a thread converts 2 rows'
  # scales a block, with x as A it converted 4 (32 a run). ptxas 13.0 gives
  # 244 to 316 (2026-12-02's x as A: 312 to 372; a branch a block before:
  # 86 to 120 each).
  for e in qmatmul_q8x qmatmul_q8x_rec; do
    mix_check "$1" $e <<'PY'
import json, sys
bits, mix = int(sys.argv[1]), json.load(open(sys.argv[2]))
what = f"qmatmul.cu sm_90a -DBITS={bits}: {mix['kernel']}'s batch stage"
runs = [r for r in mix["runs"] if r["mix"].get("IMMA", 0) == 8]
own = [r["length"] - 23 * r["mix"].get("LDGSTS", 0) for r in runs]
if len(runs) != 2 or max(own) > 330 or max(r["mix"].get("HADD2.F32?", 0) for r in runs) > 16:
    print(f"FAIL: {what}: not 2 straight runs of a stage's 8 IMMA within 330 instructions "
          "besides 23 a cp.async and with at most 16 HADD2.F32: "
          + "; ".join(f"{r['length']} with {r['mix']['IMMA']} IMMA, "
                      f"{r['mix'].get('LDGSTS', 0)} LDGSTS, "
                      f"{r['mix'].get('HADD2.F32?', 0)} HADD2.F32" for r in mix["runs"]
                      if r["mix"].get("IMMA", 0)))
    sys.exit(1)
print(f"ok: {what}: runs of {[r['length'] for r in runs]} for its 8 mma ({own} besides the copies)")
PY
  done
}
w=-DGK_FA_WGMMA=1 w5="-DGK_FA_WGMMA=4 -DGK_FA_DEC_STAGES=4"
for dt in f16 bf16; do
  for d in 64 128; do
    for c in 0 1; do
      check sm_90a flash_attention $w -DDTYPE=$dt -DHEAD_DIM=$d -DCAUSAL=$c
      check sm_90a flash_attention -DGK_FA_WGMMA=2 -DDTYPE=$dt -DHEAD_DIM=$d -DCAUSAL=$c
      check sm_90a flash_attention -DGK_FA_WGMMA=3 -DDTYPE=$dt -DHEAD_DIM=$d -DCAUSAL=$c
      # as ci/gpu/prepare.sh builds wgmma5: with sm_90a's decode ring of 4
      check sm_90a flash_attention $w5 -DDTYPE=$dt -DHEAD_DIM=$d -DCAUSAL=$c
      # and its producer by TMA (wgmma5t; f16: bf16 changes only the consumers' conversions)
      [ "$dt" = bf16 ] ||
        check sm_90a flash_attention $w5 -DGK_FA_TMA=1 -DDTYPE=$dt -DHEAD_DIM=$d -DCAUSAL=$c
    done
    for p in 16 64; do check sm_90a paged_attention $w -DDTYPE=$dt -DHEAD_DIM=$d -DPAGE=$p; done
  done
done
# ci/gpu's wsnosoft and wsbare (-DGK_FA_ABLATE=1 and 3 with -DGK_FA_WGMMA=4:
# the overlapped prefill without softmax, and without the producer's
# copies too, a diagnosis whose o is not attention's; f16, head_dim 128):
# no straight run of 32 exponentials or more (the consumers' softmax takes
# 64 a tile of 128 keys causal and 88 of 176 not, in one run each), and
# without the copies fewer cp.async than without softmax alone (ptxas 13.0:
# 68 against 82; the decodes' and Q's copies stay).
fa_ablate() { # ABLATE
  [ -f "$T/out.cubin" ] || return 0
  mix_check "$1" flash_attention <<'PY'
import json, os, sys
abl, mix = int(sys.argv[1]), json.load(open(sys.argv[2]))
what = f"flash_attention.cu sm_90a -DGK_FA_WGMMA=4 -DGK_FA_ABLATE={abl}"
mufu = max(r["mix"].get("MUFU", 0) for r in mix["runs"])
cp = sum(r["mix"].get("LDGSTS", 0) for r in mix["runs"])
if mufu >= 32:
    print(f"FAIL: {what}: a straight run of {mufu} MUFU: the softmax is still there")
    sys.exit(1)
keep = os.path.join(os.path.dirname(sys.argv[2]), "ablate-cp")
if abl == 1:
    open(keep, "w").write(str(cp))
elif cp >= int(open(keep).read()):
    print(f"FAIL: {what}: {cp} cp.async, not fewer than without softmax alone's {open(keep).read()}")
    sys.exit(1)
print(f"ok: {what}: at most {mufu} MUFU a run, {cp} cp.async")
PY
}
for c in 0 1; do
  for a in 1 3; do
    check sm_90a flash_attention $w5 -DGK_FA_ABLATE=$a -DDTYPE=f16 -DHEAD_DIM=128 -DCAUSAL=$c
    fa_ablate $a
  done
done
# The sm_90a images as recipes/flash_attention.lua builds them (64-key
# tiles, a decode's ring of 4). At head_dim 128 ptxas 13.0 spills there (S 64 and O 128 registers
# a thread): 64 to 92 bytes stored once before the loop, about 6 reloads a
# tile of ~1400 instructions; the H200's k64 figures were measured with
# 128 bytes (docs/gpu-speed.md). A ceiling, so that it grows no further.
for dt in f16 bf16; do
  for c in 0 1; do
    SPILL_OK="92 148" check sm_90a flash_attention -DGK_FA_QS_KEYS=64 -DGK_FA_DEC_STAGES=4 \
      -DDTYPE=$dt -DHEAD_DIM=128 -DCAUSAL=$c
    [ $dt = f16 ] && [ $c = 0 ] && [ -f "$T/out.cubin" ] && fa_merge
    check sm_90a flash_attention -DGK_FA_QS_KEYS=64 -DGK_FA_DEC_STAGES=4 -DDTYPE=$dt \
      -DHEAD_DIM=64 -DCAUSAL=$c
  done
done
# ci/gpu's dec6 (a decode's ring of 6 tiles, sm_90a): flash_attention as
# the recipe's sm_90a section with 6 stages, paged_attention with 6.
SPILL_OK="92 148" check sm_90a flash_attention -DGK_FA_QS_KEYS=64 -DGK_FA_DEC_STAGES=6 \
  -DDTYPE=f16 -DHEAD_DIM=128 -DCAUSAL=0
check sm_90a flash_attention -DGK_FA_QS_KEYS=64 -DGK_FA_DEC_STAGES=6 -DDTYPE=bf16 \
  -DHEAD_DIM=64 -DCAUSAL=1
for p in 16 64; do
  check sm_90a paged_attention -DGK_FA_DEC_STAGES=6 -DDTYPE=f16 -DHEAD_DIM=128 -DPAGE=$p
done
# The attention kernels at head_dim 128 take all 255 registers on most
# targets, and ptxas 13.0 spills a few bytes in one image or another as the
# decode changes: 4 bytes in sm_90 and sm_90a's 32-key flash_attention from
# the decode's blocks of fragments (gk_fa_mma_decode's FB 4) until the
# split's merge handed each slot's weight over by shuffles, then 4 bytes in
# sm_100's paged_attention until the merge loaded each row's max with the
# row before's outputs; a merge that kept every row's max in shared memory
# spilled 40 in paged_attention's sm_80 to sm_90a images. That merge now
# spills in sm_120's images alone, 8 bytes in flash_attention (causal) and
# 32 in paged_attention, stored in the prologue (ptxas 13.0; loading each
# row's sum with its outputs instead moved 4 bytes to sm_90 and sm_90a's
# flash_attention and left 24 in sm_120's paged_attention). The two-level
# merge of a speculative decode (gk_fa_merge_batch, 2026-12-01) took
# sm_120's to none in flash_attention and 8 bytes in paged_attention, and
# put 4 bytes in sm_90 and sm_90a's 32-key head_dim-128 flash_attention,
# stored in the prologue and reloaded once in the decode's merge of its
# warps (S90_FA; sm_90a's shipped image, 64-key tiles, spills less than
# before: below). S120: its ceilings, sm_120 only (consumer Blackwell, not
# a measured target).
S120_FA="0 0" S120_PA="8 8" S90_FA="4 4"
# qm_spill ARCH BITS: the ceiling of qmatmul.cu's image. Since the int8
# batch tile (q8x_batch.cuh) takes W as the mma's A (2026-12-03: 16 fewer
# scale conversions a stage; sm_90 and sm_90a spill nothing at any BITS),
# ptxas 13.0 spills in it elsewhere:
# - sm_80, BITS 1 and 2: the records' tile (qmatmul_q8x_rec) stores 8
#   registers in each stage's run of ~310 instructions and reloads them
#   there (2 stores and 2 loads a warp); BITS 4 up to 6. Its stage still
#   issues fewer instructions than with x as A (312 against 338 at BITS 1).
#   With x as A (2026-12-02) only BITS 1 spilled, 8 bytes in the prologue.
# - sm_86, sm_87, sm_89 at BITS 4: the floats' tile, 4 bytes stored once
#   a tile and reloaded once a stage (one load in ~600 instructions).
# - sm_100 at BITS 4: 12 bytes in qmatmul_q8x_rec around its call of the
#   tile; at BITS 2 the qmatmul entry stores 8 bytes at its entry and
#   reloads them before and after its loops, and at BITS 8 qmatmul_q8x's
#   m = 1 walk stores 8 bytes a tile and reloads them after its last step
#   (both since the m = 1 walks take several tiles a block, 2026-12-01).
# - sm_120 (consumer Blackwell, not a measured target; its tile keeps the
#   rounding's clamps, GK_Q8B_FAST): 16 bytes in qmatmul_q8x_rec around
#   the tile's call at BITS 1, 2 and 4 (48 reloaded at 4); at BITS 8 the
#   floats' tile stores 2 and reloads 4 registers a stage's run, and the m
#   = 1 walk 40 bytes a tile (16 with x as A).
qm_spill() {
  case "$1:$2" in
    sm_80:1 | sm_80:2) echo "32 32" ;;
    sm_80:4) echo "20 24" ;;
    sm_86:4 | sm_87:4 | sm_89:4) echo "4 8" ;;
    sm_100:2 | sm_100:8) echo "8 16" ;;
    sm_100:4) echo "12 12" ;;
    sm_120:1 | sm_120:2) echo "16 16" ;;
    sm_120:4) echo "16 48" ;;
    sm_120:8) echo "52 100" ;;
    *) echo "0 0" ;;
  esac
}
# (qmatmul_q8x at BITS 1 on sm_80 to sm_90a spilled 8 to 16 bytes in the
# kernel's walk over the batch tiles, around its call of the noinline
# gk_q8b_tile, from 2026-11-30 until that tile's whole stages copied from
# its rows in shared memory (2026-12-02): none there since, on every
# target; what the tile spills since W is the mma's A is qm_spill's. The
# m = 1 walk, gk_q8x_walk1 with its ring of 8 sets at BITS 1, spilled 16
# bytes a tile on sm_90 and sm_90a while its loop began at a value read
# back from shared memory; beginning at gk_walk_rows_start's, none.)
for a in sm_75 sm_80 sm_90a; do
  ok=; [ $a = sm_90a ] && ok=$S90_FA
  for c in 0 1; do
    SPILL_OK=${ok:-0 0} check $a flash_attention -DDTYPE=f16 -DHEAD_DIM=128 -DCAUSAL=$c
  done
  SPILL_OK=${ok:-0 0} check $a flash_attention -DDTYPE=bf16 -DHEAD_DIM=128 -DCAUSAL=0
  check $a paged_attention -DDTYPE=bf16 -DHEAD_DIM=128 -DPAGE=64
  check $a paged_attention -DDTYPE=f16 -DHEAD_DIM=64 -DPAGE=16
  for b in 1 2 4 8; do
    SPILL_OK=$(qm_spill $a $b) check $a qmatmul -DBITS=$b
    [ $a = sm_90a ] && [ -f "$T/out.cubin" ] && qm_loop $b
  done
done
# ci/gpu's qmatmul experiments as prepare.sh builds them (sm_90a), so that
# they still compile between GPU sessions: qmpf (W's L2 prefetch in the
# m > 1 tile; at BITS 8 ptxas 13.0 spills 40 bytes, held to that) and qmxs
# (x through shared memory). No bound on their loops.
for b in 4 8; do
  ok=; [ $b = 8 ] && ok="40 76"
  SPILL_OK=${ok:-0 0} check sm_90a qmatmul -DBITS=$b -DGK_QM_TILE_PF=1
  check sm_90a qmatmul -DBITS=$b -DGK_QM_TILE_XS=1
done
# qmload (-DGK_QM_LOADS_ONLY=1: the m = 1 loops' loads of W alone, a
# diagnosis whose y is not qmatmul's): it must load what the kernel loads
# and issue little else, or its time says nothing of the kernel's loads.
# qmatmul's m = 1 trip: one straight run of 2 steps x 4 rows x the words a
# lane loads of a row a step (the header and 1 code word at BITS 1 and 4,
# 2 at BITS 2 and 8), no fmaf, within 5 instructions a load (ptxas 13.0:
# 49, 62, 64 and 75 for 16, 24, 16, 24: nvcc unrolled the bare loop 2 to
# 4 times, more loads in flight, until GK_QM_LOADS_ONLY kept it rolled);
# qmatmul_q8x's: a run of the ring's loads (Sets x 4 rows x 1 + BITS words;
# at BITS 8 a step's, its two steps in two runs) without dp4a, within 4 a
# load. At BITS 8 the m = 1 walks spill 4 to 48 bytes once a chunk (ptxas
# 13.0; none in their trips).
qm_loads_only() {
  mix_check "$1" qmatmul <<'PY'
import json, sys
bits, mix = int(sys.argv[1]), json.load(open(sys.argv[2]))
loads = 2 * 4 * (3 if bits in (2, 8) else 2)
runs = [r for r in mix["runs"] if r["mix"].get("LDG", 0) == loads and not r["mix"].get("FFMA")]
what = f"qmatmul.cu sm_90a -DBITS={bits} -DGK_QM_LOADS_ONLY=1: qmatmul's m = 1 trip"
if not runs or min(r["length"] for r in runs) > 5 * loads:
    print(f"FAIL: {what}: no straight run of {loads} loads without fmaf within {5 * loads} "
          "instructions; runs with loads: " + "; ".join(
              f"{r['length']} with {r['mix']['LDG']}" for r in mix["runs"] if r["mix"].get("LDG", 0) >= 8))
    sys.exit(1)
print(f"ok: {what}: {min(r['length'] for r in runs)} instructions for {loads} loads")
PY
  mix_check "$1" qmatmul_q8x <<'PY'
import json, sys
bits, mix = int(sys.argv[1]), json.load(open(sys.argv[2]))
sets = {1: 8, 2: 4}.get(bits, 2)
loads = sets * 4 * (1 + bits) // (2 if bits == 8 else 1)
runs = [r for r in mix["runs"] if r["mix"].get("LDG", 0) == loads and not r["mix"].get("IDP4A")
        and r["length"] <= 4 * loads]
what = f"qmatmul.cu sm_90a -DBITS={bits} -DGK_QM_LOADS_ONLY=1: qmatmul_q8x's m = 1 trip"
if not runs:
    print(f"FAIL: {what}: no straight run of {loads} loads without dp4a within {4 * loads} "
          "instructions; runs with loads: " + "; ".join(
              f"{r['length']} with {r['mix']['LDG']}" for r in mix["runs"] if r["mix"].get("LDG", 0) >= 8))
    sys.exit(1)
print(f"ok: {what}: {max(r['length'] for r in runs)} instructions for {loads} loads")
PY
}
for b in 1 2 4 8; do
  ok=; [ $b = 8 ] && ok="48 48"
  SPILL_OK=${ok:-0 0} check sm_90a qmatmul -DBITS=$b -DGK_QM_LOADS_ONLY=1
  [ -f "$T/out.cubin" ] && qm_loads_only $b
done
# The other targets the recipes ship by default (recipes/toolchains/nvcc.lua):
# each kernel file once or per BITS, no bound on the loops; qmatmul's
# ceilings are qm_spill's (above).
for a in sm_86 sm_87 sm_89 sm_90 sm_100 sm_120; do
  for b in 1 2 4 8; do
    SPILL_OK=$(qm_spill $a $b) check $a qmatmul -DBITS=$b
  done
  ok=; [ $a = sm_120 ] && ok=$S120_FA; [ $a = sm_90 ] && ok=$S90_FA
  for c in 0 1; do
    SPILL_OK=${ok:-0 0} check $a flash_attention -DDTYPE=f16 -DHEAD_DIM=128 -DCAUSAL=$c
  done
  ok=; [ $a = sm_120 ] && ok=$S120_PA
  SPILL_OK=${ok:-0 0} check $a paged_attention -DDTYPE=f16 -DHEAD_DIM=128 -DPAGE=64
done
[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "ok: $n images (16 sm_90a wgmma attention, 28 warp-specialized (4 of them loading by TMA), 27 default, 4 of ci/gpu's prefill diagnoses, 8 sm_90a as shipped, 4 of its dec6, 8 of its qmatmul experiments, 42 of the other shipped targets): no serialized wgmma, no compiler-inserted arrive, no spills but the known ceilings (sm_90a's head_dim-128 attention, sm_90's head_dim-128 flash_attention, sm_120's head_dim-128 paged_attention, qmatmul's on sm_80 to sm_89, sm_100 and sm_120 (qm_spill: the int8 batch tile, the m = 1 walks), the qmpf and qmload experiments' BITS 8); qmatmul's m = 1 loop, m > 1 tile, qmatmul_q8x's m = 1 trip, the int8 batch stage and qmatmul_q8x_mm's trip within their bounds, qmload's trips the kernel's loads, the prefill diagnoses without softmax and copies"
