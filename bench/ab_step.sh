#!/usr/bin/env bash
# A/B of two builds' whole training step in one run: alternates the two bench_step binaries for
# ROUNDS rounds and prints, per configuration, the minimum over rounds of each side's median step
# time and their ratio (min: on a noisy VM the least-disturbed round is the best estimate), plus
# both sides' fraction of the step-GEMM limit and allocations per step.
#   git worktree add /tmp/base HEAD~1 && cmake -S /tmp/base -B /tmp/base/build -DTAPEGRAD_BUILD_BENCH=ON \
#     && cmake --build /tmp/base/build --target bench_step
#   bash bench/ab_step.sh /tmp/base/build build [ROUNDS=3] [bench_step flags per config, ';'-separated]
set -euo pipefail
base="$1" new="$2" rounds="${3:-3}"
[[ "$rounds" =~ ^[1-9][0-9]{0,3}$ ]] || { echo "ab_step.sh: ROUNDS must be a whole number from 1 to 9999, got '$rounds'" >&2; exit 2; }
for dir in "$base" "$new"; do
  [[ -x "$dir/bench/bench_step" ]] || { echo "ab_step.sh: no bench_step in '$dir/bench' (give two build directories)" >&2; exit 2; }
done
configs="${4:---threads 2 --dim 128;--threads 1 --dim 128;--threads 2 --dim 64;--threads 1 --dim 64}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
IFS=';' read -r -a cfgs <<< "$configs"
for round in $(seq "$rounds"); do
  for i in "${!cfgs[@]}"; do
    for side in base new; do
      dir=$([[ $side == base ]] && echo "$base" || echo "$new")
      # shellcheck disable=SC2086  # the configuration is a list of flags
      "$dir/bench/bench_step" ${cfgs[$i]} --steps 40 |
        sed "s/^{/{\"side\": \"$side\", \"config\": $i, /" >> "$work/runs.jsonl"
    done
  done
done
/usr/bin/python3 - "$work/runs.jsonl" "$configs" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
configs = sys.argv[2].split(";")
print("| configuration | base ms | new ms | new/base | base of limit | new of limit | allocations/step (new) |")
print("|---|---|---|---|---|---|---|")
for i, cfg in enumerate(configs):
    side = {s: [r for r in rows if r["config"] == i and r["side"] == s] for s in ("base", "new")}
    best = {s: min(side[s], key=lambda r: r["median_ms"]) for s in side}
    b, n = best["base"]["median_ms"], best["new"]["median_ms"]
    print(f"| `{cfg.strip()}` | {b:.2f} | {n:.2f} | **{n / b:.3f}** | {best['base']['fraction_of_gemm_peak']:.0%} | "
          f"{best['new']['fraction_of_gemm_peak']:.0%} | {max(r['allocations_per_step'] for r in side['new']):g} |")
PY
