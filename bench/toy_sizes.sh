#!/usr/bin/env bash
# The toy-size targets in one run: for C = 64, 128, 256 (L4 H4 T64 B12 V65), the training step on
# 1 and 2 threads, the 2-thread step both ways (the batch split Trainer runs, and every op split in
# turn), each against its own step-GEMM limit (lm/flops.h), and the 2-thread speed-up.
#   bash bench/toy_sizes.sh [STEPS=30]      # prints a markdown table
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
steps="${1:-30}"
"$root/scripts/install-deps.sh" --bench
TAPEGRAD_TARGETS=bench_step "$root/scripts/build.sh" -DTAPEGRAD_BUILD_BENCH=ON >/dev/null
bin="${TAPEGRAD_BUILD_DIR:-$root/build}/bench/bench_step"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
for C in 64 128 256; do
  "$bin" --dim "$C" --threads 1 --steps "$steps" >> "$out"
  for split in batch op; do "$bin" --dim "$C" --threads 2 --split "$split" --steps "$steps" >> "$out"; done
done
/usr/bin/python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| C | threads | split | median ms | model GFLOP/s | step-GEMM limit GFLOP/s | fraction of limit | 2 threads / 1 |")
print("|---|---|---|---|---|---|---|---|")
one = {}
for r, dim in zip(rows, [c for c in (64, 128, 256) for _ in range(3)]):
    speedup = ""
    if r["threads"] == 1:
        one[dim] = r["median_ms"]
        split = "—"
    else:
        split = r["split"]
        speedup = f"{one[dim] / r['median_ms']:.2f}x"
    print(f"| {dim} | {r['threads']} | {split} | {r['median_ms']:.2f} | {r['gflops_per_s']:.0f} | {r['gemm_gflops']:.0f} | "
          f"{r['fraction_of_gemm_peak']:.0%} | {speedup} |")
print(f"\nOpenBLAS kernels: {', '.join(sorted({r['blas_core'] for r in rows}))}; allocations per step: "
      f"{max(r['allocations_per_step'] for r in rows):g}.")
PY
