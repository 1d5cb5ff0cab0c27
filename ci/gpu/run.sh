#!/bin/sh
# run.sh - runs ON THE GPU MACHINE, from the repository root, with gpu-pack/
# (ci/gpu/prepare.sh) carried beside the tree. Builds nothing. Writes under
# a work folder ($GK_GPU_WORK, default /tmp/gk-gpu-work, emptied first) one
# log per step and summary.txt, and after each step copies what the device
# tool brings back (at most 8 files, none deeper than 2 folders) to $OUT
# (default gpu-out/): summary.txt, report.md (bench's), experiments.md,
# logs.tar.gz (every log, JSON and Nsight Compute text page of the work
# folder) and ncu-reports.tar (the .ncu-rep files, when under 16 MiB); at
# the end it prints report.md, experiments.md and the summary, which the
# device tool's output tail keeps should no file come back. The steps:
#   smi        nvidia-smi, nvidia-smi -q, the OS and PyTorch versions
#   probe      gk probe: the device libgk finds and what each kernel gets
#   test       tests/gpu's test_gpu: every cuda kernel x variant x entry
#              point against the CPU images, every image the card runs
#   bench      bench/gpu.sh: bench/report.md and bench/gpu.json (with PyTorch)
#   probes     test_wgmma_probe (one wgmma per shape, D against A B; the
#              128-byte swizzle of wgmma5's stages too) and test_tma_probe:
#              K tiles loaded by TMA (no swizzle, boxes of 8 x 64; and the
#              128-byte swizzle, boxes of 64 x 64) and read by wgmma as K
#              and as V, the layouts a TMA producer would use
#              (docs/gpu-speed.md, "Next steps")
#   wgmma5     gpu-pack/wgmma5.gkfat (the attention kernels for sm_90a,
#              flash_attention's prefill on wgmma, warp-specialized, blocks
#              of 384): test_gpu against gpu.gkfat's CPU images, then
#              gk_bench_gpu's flash_attention cases (prefill and decode),
#              each in turns with gpu.gkfat's default sm_90a image on the
#              same inputs (--ref; every experiment's A/B is timed so, and
#              each diagnosis's beside the kernel it is read against)
#   wgmma5b    the same for gpu-pack/wgmma5b.gkfat (wgmma5 from an earlier
#              commit, ci/gpu/prepare.sh's GK_GPU_WGMMA5_BASE: the stages
#              without the 128-byte swizzle), the prefill cases alone
#   wgmma5t    the same for gpu-pack/wgmma5t.gkfat (wgmma5 with its
#              producer loading by TMA, maps built on the device), the
#              prefill cases alone
#   wsnosoft   gpu-pack/wsnosoft.gkfat (wgmma5's flash_attention with
#              -DGK_FA_ABLATE=1: its prefill without softmax, P the scores
#              rounded): gk_bench_gpu's prefill cases alone, no test_gpu (a
#              diagnosis: its o is not attention's)
#   wsbare     the same for gpu-pack/wsbare.gkfat (-DGK_FA_ABLATE=3: without
#              softmax and without the producer's copies of K and V): with
#              wsnosoft, what holds wgmma5's prefill (experiments.md)
#   k32        the same for gpu-pack/k32.gkfat (the attention kernels for
#              sm_90: the mma.sync prefill on the 32-key tiles of every
#              target but sm_90a, whose image takes 64)
#   dec6       gpu-pack/dec6.gkfat (flash_attention and paged_attention for
#              sm_90a, a decode's ring of 6 tiles, 5 in flight, where the
#              default image's flash_attention has 4 and paged_attention 3):
#              test_gpu, then gk_bench_gpu's decodes of both (and their
#              split table)
#   q8mb2      gpu-pack/q8mb2.gkfat (qmatmul alone, sm_90a,
#              -DGK_Q8M_MIN_BLOCKS=2: qmatmul_q8x_mm's tile at two blocks an
#              SM): test_gpu, then gk_bench_gpu's BITS 4 qmatmul cases;
#              not a default step (timed 2026-11-29: within 2% either way;
#              the unrolled ring since needs more than its 128 registers)
#   base       gpu-pack/base.gkfat (qmatmul, flash_attention,
#              paged_attention and kv_append for sm_90a from the kernels of
#              an earlier commit, prepare.sh's GK_GPU_BASE): test_gpu, then
#              gk_bench_gpu's m = 1 and m = 16 qmatmul cases (qmatmul and
#              qmatmul_q8x), BITS 4 at m = 512 (qmatmul_q8x_x + _mm), the
#              flash and paged decodes and the causal prefills (the
#              heaviest query blocks first across heads since 2026-12-03),
#              the A/B of what changed since that commit's measurements
#   qmpf       gpu-pack/qmpf.gkfat (qmatmul alone, sm_90a,
#              -DGK_QM_TILE_PF=1: the f32 m > 1 tile prefetching W into L2):
#              test_gpu, then gk_bench_gpu's m = 16 cases
#   qmxs       gpu-pack/qmxs.gkfat (qmatmul alone, sm_90a,
#              -DGK_QM_TILE_XS=1: the f32 m > 1 tile with x through shared
#              memory): test_gpu, then gk_bench_gpu's m = 1 and m = 16 cases
#   qmload     gpu-pack/qmload.gkfat (qmatmul alone, sm_90a,
#              -DGK_QM_LOADS_ONLY=1: the m = 1 loops load W as they do and
#              fold the words, no decode, no product): gk_bench_gpu's m = 1
#              qmatmul cases alone, no test_gpu (a diagnosis: its y is not
#              qmatmul's), what each loop's loads allow against its time
#   compare    ci/gpu/experiments.py: each flash_attention case's TFLOP/s on
#              every archive whose step passed, against SDPA's (and the
#              diagnoses' prefills beside wgmma5's), and
#              qmatmul_q8x_mm's on the default image and q8mb2's against
#              PyTorch's f16 GEMM, and base's m = 1, m = 16 and paged cases,
#              dec6's paged decodes,
#              qmpf's m = 16 and qmxs's m = 1 and 16 against the default
#              image's, and qmload's m = 1 beside them (experiments.md)
#   sass       cuobjdump -res-usage -sass of the sm_90a images of the causal
#              f16 head_dim-128 flash_attention (gpu.gkfat, wgmma5.gkfat,
#              wgmma5t.gkfat)
#              and of qmatmul bits=4 and bits=1
#              (sass-*.txt), for reading where no disassembler is
#   memcheck   test_gpu --small under compute-sanitizer --tool memcheck
#   racecheck  the same under racecheck
#   ncu        Nsight Compute on qmatmul and qmatmul_q8x (m=1 and 16, bits=4;
#              qmatmul m=1 bits=1 too), on
#              flash_attention prefill and decode (one token, and 16:
#              fa-spec), paged_attention's decodes (pa-decode, pa-short),
#              on qmatmul_q8x_mm (m=512, bits=4) and, where the wgmma5 step
#              passed, on its archive's prefill (ncu-*.txt; each launch's
#              stall reasons, ncu-*-stalls.txt; the prefill's, decodes',
#              qmatmul's, qmatmul_q8x's and qmatmul_q8x_mm's per SASS
#              instruction, ncu-*-source.csv); $GK_GPU_NCU="fa-spec ..."
#              takes only the profiles it names
#   vulkan     tests/backends/vulkan's test_vk_kernels on NVIDIA's Vulkan driver, with
#              the loader unpacked from gpu-pack/debs
# Each step has its own timeout and the run goes on past a failed one; all
# of them share $GK_GPU_BUDGET seconds (default 475), so the call ends in
# about 8 minutes; $OUT is complete after each step, so a call killed at its
# limit still brings back what ran. $GK_GPU_STEPS picks steps (default all
# but q8mb2, in the order above).
# Our binaries get gpu-pack/lib on LD_LIBRARY_PATH; PyTorch, nvidia-smi and
# ncu do not. Exit 0 when every step that ran passed or skipped, else 1.
set -u
case ${1:-} in -h|--help) sed -n '2,105p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
root=$(cd "$(dirname "$0")/../.." && pwd)
pack=${GK_GPU_PACK:-$root/gpu-pack}
out=${OUT:-$root/gpu-out}
work=${GK_GPU_WORK:-/tmp/gk-gpu-work}
budget=${GK_GPU_BUDGET:-475}
steps=${GK_GPU_STEPS:-smi probe test bench probes wgmma5 wgmma5b wgmma5t wsnosoft wsbare k32 dec6 base qmpf qmxs qmload compare sass memcheck racecheck ncu vulkan}
archive=$pack/gpu.gkfat
test_gpu=$pack/tests/gpu/test_gpu
libs="LD_LIBRARY_PATH=$pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ ! -x "$test_gpu" ] || [ ! -f "$archive" ]; then
  echo "ci/gpu/run.sh: $pack is missing or incomplete: run ci/gpu/prepare.sh where the project builds, and carry gpu-pack" >&2
  exit 1
fi
case $work in "$out"|"$out"/*|/) echo "ci/gpu/run.sh: GK_GPU_WORK must lie outside \$OUT ($out)" >&2; exit 1 ;; esac
rm -rf "$work" && mkdir -p "$work/bench" "$out" || exit 1
cd "$root" || exit 1
start=$(date +%s)
status=0
: >"$work/summary.txt"

# collect: what the device tool brings back, at most 8 files, copied from
# the work folder to $out after every step (each file replaced whole, so a
# call killed mid-copy still leaves the last step's).
collect() {
  for f in summary.txt bench/report.md experiments.md; do
    b=$(basename "$f")
    [ -f "$work/$f" ] && cp "$work/$f" "$out/.$b.tmp" && mv "$out/.$b.tmp" "$out/$b"
  done
  tar -czf "$out/.logs.tmp" -C "$work" --exclude=./vulkan-loader --exclude='*.ncu-rep' . &&
    mv "$out/.logs.tmp" "$out/logs.tar.gz"
  reps=$(cd "$work" && find . -maxdepth 1 -name '*.ncu-rep' | sort)
  if [ -n "$reps" ]; then
    # shellcheck disable=SC2086 # $reps: names without blanks (ncu-NAME.ncu-rep)
    (cd "$work" && tar -cf "$out/.reps.tmp" $reps) &&
      if [ "$(wc -c <"$out/.reps.tmp")" -le $((16 * 1024 * 1024)) ]; then
        mv "$out/.reps.tmp" "$out/ncu-reports.tar"
      else
        rm -f "$out/.reps.tmp" "$out/ncu-reports.tar"
        echo "(the .ncu-rep files are over 16 MiB: logs.tar.gz has their text pages)" >"$work/ncu-reports.txt"
      fi
  fi
  rm -f "$out/.logs.tmp" "$out/.reps.tmp"
}

# step NAME LIMIT CMD...: CMD's output to $work/NAME.log, killed after LIMIT
# seconds or what is left of the budget; its status and time go to
# summary.txt, $out is refreshed, and the run goes on whatever it was.
step() {
  name=$1 limit=$2
  shift 2
  case " $steps " in *" $name "*) ;; *) return 0 ;; esac
  left=$((budget - ($(date +%s) - start)))
  [ "$limit" -gt "$left" ] && limit=$left
  if [ "$limit" -lt 10 ]; then
    echo "$name: not run, the time budget ($budget s) is spent" | tee -a "$work/summary.txt"
    return 0
  fi
  t0=$(date +%s)
  timeout -k 5 "$limit" "$@" >"$work/$name.log" 2>&1
  rc=$?
  case $rc in
    0) verdict=ok ;;
    77) verdict=skipped ;;
    124|137) verdict="TIMED OUT after $limit s"; status=1 ;;
    *) verdict="FAILED (exit $rc)"; status=1 ;;
  esac
  echo "$name: $verdict, $(($(date +%s) - t0)) s" | tee -a "$work/summary.txt"
  { grep -E '^(FAIL|SKIP)' "$work/$name.log" | head -5; tail -n 2 "$work/$name.log"; } |
    uniq | sed 's/^/    /'
  collect
}

step smi 30 sh -c 'nvidia-smi || exit 1; nvidia-smi -q; uname -a; ldd --version | head -1
  python3 -c "import torch; print(\"torch\", torch.__version__, torch.version.cuda)" ||
    echo "PyTorch: not importable"'
step probe 30 env "$libs" "$pack/gk" probe "$archive"
step test 150 env "$libs" "$test_gpu" "$archive"
# The sh -c texts below expand their own $1, $2... in the inner shell; bench
# before the experiments, so that the budget cuts those first.
# shellcheck disable=SC2016
step bench 200 env GK_GPU_ARCHIVE="$archive" GK_GPU_LIB_PATH="$pack/lib" \
  sh -c 'bench/gpu.sh "$1" "$2/bench" >"$2/bench/report.md"' sh "$pack" "$work"
# shellcheck disable=SC2016
step probes 30 sh -c 'for p in wgmma tma; do
    [ -f "$2/tests/gpu/${p}_probe.cubin" ] || { echo "SKIP: gpu-pack has no ${p}_probe.cubin"; exit 77; }
    env "$1" "$2/tests/gpu/test_${p}_probe" "$2/tests/gpu/${p}_probe.cubin" || exit 1
  done' sh "$libs" "$pack"
# The experiments (ci/gpu/prepare.sh): gpu-pack/NAME.gkfat tested against
# gpu.gkfat's CPU images, then its cases (FILTER) timed in turns with
# gpu.gkfat's on the same inputs (gk_bench_gpu --ref), so that
# experiments.py's A/B is not two moments of the card apart.
# shellcheck disable=SC2016
experiment='[ -f "$2/$4.gkfat" ] || { echo "SKIP: gpu-pack has no $4.gkfat"; exit 77; }
  env "$1" "$2/tests/gpu/test_gpu" "$2/$4.gkfat" "$2/gpu.gkfat"; r=$?
  [ "$r" -eq 0 ] || exit "$r"
  env "$1" "$2/bench/gk_bench_gpu" "$2/$4.gkfat" --json "$3/$4-bench.json" \
    --ref "$2/gpu.gkfat" --filter "$5" \
    ${6:+--filter "$6"} ${7:+--filter "$7"} ${8:+--filter "$8"} ${9:+--filter "$9"}'
step wgmma5 60 sh -c "$experiment" sh "$libs" "$pack" "$work" wgmma5 "flash_attention "
step wgmma5b 50 sh -c "$experiment" sh "$libs" "$pack" "$work" wgmma5b "flash_attention prefill "
step wgmma5t 50 sh -c "$experiment" sh "$libs" "$pack" "$work" wgmma5t "flash_attention prefill "
# A diagnosis (gpu-pack/NAME.gkfat, whose results are not the kernel's): its
# cases timed without test_gpu, in turns with the kernel it is read against
# (gpu-pack/REF.gkfat, where prepare.sh built it); SKIP where the bench
# found no GPU.
# shellcheck disable=SC2016
diagnosis='[ -f "$2/$4.gkfat" ] || { echo "SKIP: gpu-pack has no $4.gkfat"; exit 77; }
  ref=; [ -f "$2/$5.gkfat" ] && ref=$2/$5.gkfat
  env "$1" "$2/bench/gk_bench_gpu" "$2/$4.gkfat" --json "$3/$4-bench.json" \
    ${ref:+--ref "$ref"} --filter "$6" || exit
  if grep -q "\"skipped\"" "$3/$4-bench.json"; then echo "SKIP: no GPU (gk_bench_gpu)"; exit 77; fi'
step wsnosoft 30 sh -c "$diagnosis" sh "$libs" "$pack" "$work" wsnosoft wgmma5 \
  "flash_attention prefill "
step wsbare 30 sh -c "$diagnosis" sh "$libs" "$pack" "$work" wsbare wgmma5 "flash_attention prefill "
step k32 60 sh -c "$experiment" sh "$libs" "$pack" "$work" k32 "flash_attention "
step dec6 45 sh -c "$experiment" sh "$libs" "$pack" "$work" dec6 "flash_attention decode " \
  "paged_attention decode "
step q8mb2 45 sh -c "$experiment" sh "$libs" "$pack" "$work" q8mb2 "qmatmul bits=4 m="
step base 100 sh -c "$experiment" sh "$libs" "$pack" "$work" base " m=1 " " m=16 " \
  "attention decode " "bits=4 m=512 " "prefill causal=1,"
step qmpf 45 sh -c "$experiment" sh "$libs" "$pack" "$work" qmpf " m=16 "
step qmxs 45 sh -c "$experiment" sh "$libs" "$pack" "$work" qmxs " m=1 " " m=16 "
step qmload 40 sh -c "$diagnosis" sh "$libs" "$pack" "$work" qmload gpu " m=1 "
step compare 20 python3 "$root/ci/gpu/experiments.py" "$work"
# The sh -c texts from here on read these from the environment.
OUTD=$work LIBS=$libs PACK=$pack ARCH=$archive
export OUTD LIBS PACK ARCH
# The machine code, for the sessions that have no GPU and no disassembler
# (registers a thread, where the spills and the wgmma waits are).
# shellcheck disable=SC2016
step sass 30 sh -c 'command -v cuobjdump >/dev/null || { echo "SKIP: no cuobjdump"; exit 77; }
  dump() { # ARCHIVE NAME TARGET KERNEL VARIANT
    [ -f "$1" ] || return 0
    rm -rf "$OUTD/x" && env "$LIBS" "$PACK/gk" extract "$1" -o "$OUTD/x" --backend cuda \
      --target "$3" --kernel "$4" --variant "$5" >/dev/null || return 1
    find "$OUTD/x" -name "*.cubin" | sort | while read -r f; do
      echo "==== $f"; cuobjdump -res-usage -sass "$f"
    done >"$OUTD/sass-$2.txt" && rm -rf "$OUTD/x"
  }
  fa=causal=1,dtype=f16,head_dim=128
  dump "$PACK/gpu.gkfat" fa sm_90a flash_attention "$fa" &&
    dump "$PACK/wgmma5.gkfat" fa-wgmma5 sm_90a flash_attention "$fa" &&
    dump "$PACK/wgmma5t.gkfat" fa-wgmma5t sm_90a flash_attention "$fa" &&
    dump "$PACK/gpu.gkfat" qmatmul sm_90a qmatmul bits=4 &&
    dump "$PACK/gpu.gkfat" qmatmul-b1 sm_90a qmatmul bits=1 && ls -l "$OUTD"/sass-*.txt' sh
step memcheck 90 env "$libs" tests/gpu/sanitize.sh "$test_gpu" "$archive" "$archive" memcheck
step racecheck 90 env "$libs" tests/gpu/sanitize.sh "$test_gpu" "$archive" "$archive" racecheck
# Nsight Compute on the first launch of each kernel the issues are about:
# qmatmul and qmatmul_q8x at m = 1 and at m = 16, BITS 4 (and at m = 16
# qmatmul_q8x_rec: the same tile on x rounded once), and qmatmul at
# m = 1, BITS 1 (the whole-block layout of BITS 1 and 2: measured at 0.38
# and 0.41 of copy, short of the 22 and 36 us its loop issues) (the warm-up
# launches, one entry a run: the bench times each entry whole before the
# next, so a regex over both would catch two launches of qmatmul; at m = 16
# qmatmul_q8x is the int8 mma.sync tile), flash_attention's causal prefill
# and its split decode at head_dim 128 (one token, and 16: fa-spec), paged_attention's first decode
# (pages of 64, one sequence of 8192) and its 8 sequences of 1024 in pages of 16 (pa-short), and
# the int8 tensor-core qmatmul_q8x_mm at m = 512, BITS 4, and last, where
# the wgmma5 step passed, the causal prefill of its archive (wgmma beside
# the default's mma.sync), and the same for wgmma5t (its TMA producer,
# fa-prefill-wgmma5t); ncu
# replays each launch once per section, with the clocks left as they are
# (--clock-control none: the lent card is never reconfigured);
# $GK_GPU_NCU, where set, names the only profiles taken (fa-spec fa-decode
# ...: a short call). Each
# launch's stall reasons go to ncu-NAME-stalls.txt (ci/gpu/stalls.py, from
# the raw page), and, for SOURCE=1, where in the SASS its warps stall
# (the SourceCounters section) to ncu-NAME-source.csv.
# shellcheck disable=SC2016
step ncu 200 sh -c 'prof() { # NAME KERNEL_REGEX SOURCE FILTER [ARCHIVE]
    case " ${GK_GPU_NCU:-$1} " in *" $1 "*) ;; *) return 0 ;; esac
    src=; [ "$3" = 1 ] && src="--section SourceCounters"
    # shellcheck disable=SC2086 # $src: one option and its value, or nothing
    ncu --clock-control none --launch-count 1 --kernel-name "regex:$2" --section SpeedOfLight \
      --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section Occupancy \
      --section LaunchStats --section WarpStateStats $src -f -o "$OUTD/ncu-$1" \
      env "$LIBS" "$PACK/bench/gk_bench_gpu" "${5:-$ARCH}" --json "$OUTD/ncu-$1.json" --runs 1 \
      --filter "$4" &&
    ncu --import "$OUTD/ncu-$1.ncu-rep" --page details >"$OUTD/ncu-$1.txt" || return 1
    ncu --import "$OUTD/ncu-$1.ncu-rep" --page raw --csv | python3 ci/gpu/stalls.py \
      >"$OUTD/ncu-$1-stalls.txt" 2>&1
    [ "$3" = 1 ] && { ncu --import "$OUTD/ncu-$1.ncu-rep" --page source --csv --print-source sass \
      >"$OUTD/ncu-$1-source.csv" 2>&1 || echo "(no source page)" >>"$OUTD/ncu-$1-source.csv"; }
    return 0
  }
  prof q8x-mm "^qmatmul_q8x_mm" 1 "qmatmul bits=4 m=512 " &&
  prof fa-prefill "^flash_attention" 1 "flash_attention prefill causal=1,dtype=f16,head_dim=128 " &&
  for m in 1 16; do
    prof "qmatmul-m$m" "^qmatmul$" 1 "qmatmul bits=4 m=$m " &&
      prof "q8x-m$m" "^qmatmul_q8x$" 1 "qmatmul bits=4 m=$m " || exit 1
  done &&
  prof q8x-rec-m16 "^qmatmul_q8x_rec$" 1 "qmatmul bits=4 m=16 " &&
  prof qmatmul-b1-m1 "^qmatmul$" 1 "qmatmul bits=1 m=1 " &&
  prof fa-decode "^flash_attention" 1 "flash_attention decode " &&
  prof fa-spec "^flash_attention" 1 "flash_attention decode causal=1,dtype=f16,head_dim=128 sq=16 " &&
  prof pa-decode "^paged_attention" 0 "paged_attention decode dtype=f16,head_dim=128,page=64 seqs=1 len=8192 " &&
  prof pa-short "^paged_attention" 0 "paged_attention decode dtype=f16,head_dim=128,page=16 seqs=8 len=1024 " &&
  if grep -q "^wgmma5: ok" "$OUTD/summary.txt"; then
    prof fa-prefill-wgmma5 "^flash_attention" 1 \
      "flash_attention prefill causal=1,dtype=f16,head_dim=128 " "$PACK/wgmma5.gkfat"
  fi &&
  if grep -q "^wgmma5t: ok" "$OUTD/summary.txt"; then
    prof fa-prefill-wgmma5t "^flash_attention" 1 \
      "flash_attention prefill causal=1,dtype=f16,head_dim=128 " "$PACK/wgmma5t.gkfat"
  fi' \
  sh
vk=$work/vulkan-loader
# shellcheck disable=SC2016
step vulkan 90 sh -c '[ -x "$2/tests/backends/vulkan/test_vk_kernels" ] ||
    { echo "SKIP: gpu-pack has no test_vk_kernels"; exit 77; }
  ls "$2"/debs/*.deb >/dev/null 2>&1 ||
    { echo "SKIP: no Vulkan loader packages in $2/debs"; exit 77; }
  for d in "$2"/debs/*.deb; do dpkg -x "$d" "$1" || exit 1; done
  # The manifest of NVIDIA ICD lies outside the search path of the loader
  # there (the device tool README): named, unless the caller named one.
  icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ] && [ -f "$icd" ]; then
    VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd
    export VK_DRIVER_FILES VK_ICD_FILENAMES
  fi
  echo "ICD: ${VK_DRIVER_FILES:-as the loader finds it}"
  LD_LIBRARY_PATH="$2/lib:$1/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$2/tests/backends/vulkan/test_vk_kernels" "$3"' sh "$vk" "$pack" "$archive"

echo "total $(($(date +%s) - start)) s; logs in $work, what comes back in $out" |
  tee -a "$work/summary.txt" >/dev/null
collect
# Last, for the output tail: the bench's report, the comparison, the summary.
for f in bench/report.md experiments.md summary.txt; do
  [ -f "$work/$f" ] && { echo; echo "==== $f"; cat "$work/$f"; }
done
exit $status
