#!/usr/bin/env bash
# Step time vs width C and context T, on 1 and 2 threads, next to the FLOP model (flops.h), so a
# user sees where time goes: the GEMM share (FLOPs/s near the measured GEMM throughput) grows with
# C; the attention core's T^2 term takes over at long contexts. L4 H4, batch 12, vocab 65.
#   bash bench/scaling.sh                # prints a markdown table
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/install-deps.sh"
TAPEGRAD_TARGETS=bench_step "$root/scripts/build.sh" -DTAPEGRAD_BUILD_BENCH=ON >/dev/null
bin="${TAPEGRAD_BUILD_DIR:-$root/build}/bench/bench_step"
echo "| C | T | threads | median ms | GFLOP/step (model) | GFLOP/s | of GEMM peak | tokens/s |"
echo "|---|---|---|---|---|---|---|---|"
run() {  # C T threads steps
  "$bin" --dim "$1" --heads 4 --ctx "$2" --threads "$3" --steps "$4" --warmup 3 |
    /usr/bin/env python3 -c "
import json, sys
j = json.loads(sys.stdin.read())
print(f\"| $1 | $2 | $3 | {j['median_ms']:.1f} | {j['gflop_per_step']:.2f} | {j['gflops_per_s']:.0f} | {j['fraction_of_gemm_peak']:.0%} | {12 * $2 / j['median_ms'] * 1000:.0f} |\")"
}
for threads in 1 2; do
  for C in 64 128 256 512; do run "$C" 64 "$threads" 20; done
  for T in 32 128 256 512; do run 128 "$T" "$threads" $((T >= 256 ? 8 : 20)); done
done
