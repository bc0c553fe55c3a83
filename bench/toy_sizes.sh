#!/usr/bin/env bash
# The toy-size targets in one run: for C = 64, 128, 256 (L4 H4 T64 B12 V65), the training step on
# 1 and 2 threads, the 2-thread step both ways (the batch split Trainer runs, and every op split in
# turn), each against its own step-GEMM limit (lm/flops.h), and the 2-thread speed-up. Every
# configuration runs ROUNDS times, interleaved (these VMs drift); the table shows each one's median
# round and the range of its fraction over the rounds.
#   bash bench/toy_sizes.sh [STEPS=30] [ROUNDS=3]      # prints a markdown table
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
steps="${1:-30}"
rounds="${2:-3}"
for arg in "steps=$steps" "rounds=$rounds"; do
  [[ "${arg#*=}" =~ ^[1-9][0-9]{0,5}$ ]] || { echo "toy_sizes.sh: ${arg%%=*} must be a whole number from 1 to 999999, got '${arg#*=}'" >&2; exit 2; }
done
"$root/scripts/install-deps.sh" --bench
TAPEGRAD_TARGETS=bench_step "$root/scripts/build.sh" -DTAPEGRAD_BUILD_BENCH=ON >/dev/null
bin="${TAPEGRAD_BUILD_DIR:-$root/build}/bench/bench_step"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
for round in $(seq "$rounds"); do
  for C in 64 128 256; do
    "$bin" --dim "$C" --threads 1 --steps "$steps" | sed "s/^{/{\"dim\": $C, /" >> "$out"
    for split in batch op; do
      "$bin" --dim "$C" --threads 2 --split "$split" --steps "$steps" | sed "s/^{/{\"dim\": $C, /" >> "$out"
    done
  done
done
/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"Each configuration's median round of {sys.argv[2]}; the last column the range of its fraction over the rounds.\n")
print("| C | threads | split | median ms | model GFLOP/s | step-GEMM limit GFLOP/s | fraction of limit | 2 threads / 1 | fraction, all rounds |")
print("|---|---|---|---|---|---|---|---|---|")
one = {}
for dim in (64, 128, 256):
    for threads, split in ((1, None), (2, "batch"), (2, "op")):
        runs = sorted((r for r in rows if r["dim"] == dim and r["threads"] == threads and (split is None or r["split"] == split)),
                      key=lambda r: r["median_ms"])
        r = runs[len(runs) // 2]
        fractions = [x["fraction_of_gemm_peak"] for x in runs]
        speedup = ""
        if threads == 1:
            one[dim] = r["median_ms"]
        else:
            speedup = f"{one[dim] / r['median_ms']:.2f}x"
        print(f"| {dim} | {threads} | {split or '—'} | {r['median_ms']:.2f} | {r['gflops_per_s']:.0f} | {r['gemm_gflops']:.0f} | "
              f"{r['fraction_of_gemm_peak']:.0%} | {speedup} | {min(fractions):.0%}–{max(fractions):.0%} |")
print(f"\nOpenBLAS kernels: {', '.join(sorted({r['blas_core'] for r in rows}))}; allocations per step: "
      f"{max(r['allocations_per_step'] for r in rows):g}.")
PY
