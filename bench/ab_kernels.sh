#!/usr/bin/env bash
# A/B of two builds' kernel benchmarks in one run: alternates the two bench_kernels binaries for
# ROUNDS rounds of 5 repetitions each and prints, per benchmark, the minimum real time of each and
# their ratio (min: on a noisy VM the least-disturbed repetition is the best estimate).
#   git worktree add /tmp/base HEAD~1 && cmake -S /tmp/base -B /tmp/base/build -DTAPEGRAD_BUILD_BENCH=ON \
#     && cmake --build /tmp/base/build --target bench_kernels
#   bash bench/ab_kernels.sh /tmp/base/build build 'norm|cross_entropy' [ROUNDS=3]
set -euo pipefail
base="$1" new="$2" filter="$3" rounds="${4:-3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for round in $(seq "$rounds"); do
  for side in base new; do
    dir=$([[ $side == base ]] && echo "$base" || echo "$new")
    # JSON, not CSV: Google Benchmark's CSV reporter aborts when benchmarks report different counters.
    "$dir/bench/bench_kernels" --benchmark_filter="$filter" --benchmark_repetitions=5 \
      --benchmark_format=json > "$work/$side.$round.json" 2>/dev/null
  done
done
python3 - "$work" <<'PY'
import collections, glob, json, os, sys
best = collections.defaultdict(lambda: float("inf"))
unit = {}
for path in glob.glob(os.path.join(sys.argv[1], "*.json")):
    side = os.path.basename(path).split(".")[0]
    for b in json.load(open(path))["benchmarks"]:
        if b.get("run_type") == "iteration":
            best[(b["run_name"], side)] = min(best[(b["run_name"], side)], b["real_time"])
            unit[b["run_name"]] = b["time_unit"]
for name in sorted({k[0] for k in best}):
    b, n = best[(name, "base")], best[(name, "new")]
    print(f"{name:50s} base {b:9.1f} {unit[name]:2s}  new {n:9.1f} {unit[name]:2s}  new/base {n / b:.3f}")
PY
