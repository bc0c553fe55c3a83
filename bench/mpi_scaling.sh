#!/usr/bin/env bash
# Data-parallel train_lm on this machine: N = 1 process (2 threads) vs N = 2 ranks (1 thread each,
# so the 2 cores are never oversubscribed), alternating for ROUNDS rounds; medians of ms/step,
# tokens/s and the allreduce's share. Default model: L4 H4 C128 T64, global batch 12.
#   bash bench/mpi_scaling.sh [ROUNDS=5] [extra train_lm flags]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds="${1:-5}"
shift || true
"$root/scripts/install-deps.sh"
TAPEGRAD_TARGETS=train_lm "$root/scripts/build.sh" >/dev/null
bin="${TAPEGRAD_BUILD_DIR:-$root/build}/examples/train_lm"
mpi=(mpirun --oversubscribe -np 2)
[[ $(id -u) -eq 0 ]] && mpi=(mpirun --allow-run-as-root --oversubscribe -np 2)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for r in $(seq "$rounds"); do
  "$bin" --threads 2 --steps 120 --eval-every 0 --checkpoint-every 0 --out "$work/n1_$r" "$@" 2>/dev/null
  "${mpi[@]}" "$bin" --steps 120 --eval-every 0 --checkpoint-every 0 --out "$work/n2_$r" "$@" 2>/dev/null
done
python3 - "$work" "$rounds" <<'PY'
import glob, json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def stats(n):
    ms, tok, comm = [], [], []
    for path in glob.glob(f"{work}/n{n}_*/metrics.jsonl"):
        rows = [json.loads(l) for l in open(path)][10:]  # after 10 warm-up steps
        ms.append(statistics.median(r["step_ms"] for r in rows))
        tok.append(statistics.median(r["tokens_per_s"] for r in rows))
        comm.append(statistics.median(r.get("comm_ms", 0.0) for r in rows))
    return statistics.median(ms), statistics.median(tok), statistics.median(comm)
print(f"Medians over {rounds} alternating rounds, steps 11-120 of each run.\n")
print("| processes | threads per process | ms/step | tokens/s | allreduce ms/step |\n|---|---|---|---|---|")
for n in (1, 2):
    ms, tok, comm = stats(n)
    print(f"| {n} | {2 // n} | {ms:.1f} | {tok:.0f} | {comm:.2f} |")
PY
