#!/usr/bin/env bash
# CTest "mpi: ..." — data-parallel train_lm and distributed sweeps under `mpirun -np 2` on this
# machine (as root, mpirun needs --allow-run-as-root; --oversubscribe lets 2 ranks share fewer cores).
#   1. N=2 losses match N=1 for the same seed and global batch, to float32 reduction order:
#      every step's loss within 1e-5 relative (measured: ~1e-7), evaluations too; one metrics line
#      per step (rank 0 alone writes).
#   2. --batch not divisible by the ranks: a one-line usage error, exit 2.
#   3. A run started with N=2 resumes with N=1 (and the other way) and ends where an
#      uninterrupted run ends, within the same tolerance.
#   4. mpirun -np 2 compare_norms gives the same runs.csv results as a serial sweep, bit for bit.
set -euo pipefail
bin="$1"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (Debian: apt-get install openmpi-bin libopenmpi-dev)"; exit 77; }
# OpenMPI's MPI_Init leaves allocations behind at exit (in plugins it has already unloaded, so they
# cannot be suppressed by name); under the sanitizer build, LeakSanitizer is off for mpirun-launched
# ranks only. Every program started on its own, in this and all other tests, is still leak-checked.
mpi=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" mpirun --oversubscribe -np 2)
[[ $(id -u) -eq 0 ]] && mpi=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" mpirun --allow-run-as-root --oversubscribe -np 2)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
tiny=(--layers 2 --heads 2 --dim 32 --ctx 32 --batch 4 --warmup 2 --eval-every 10 --eval-iters 4 --checkpoint-every 0)

compare() {  # metrics a, metrics b, what
  python3 - "$1" "$2" "$3" <<'PY' || exit 1
import json, sys
def load(p, key):
    return {j["step"]: j[key] for j in map(json.loads, open(p)) if key in j}
for key in ("loss", "val_loss"):
    a, b = load(sys.argv[1], key), load(sys.argv[2], key)
    if sorted(a) != sorted(b):
        sys.exit(f"FAIL: {sys.argv[3]}: {key} logged at different steps ({len(a)} vs {len(b)})")
    worst = max(abs(a[s] - b[s]) / abs(a[s]) for s in a)
    if worst > 1e-5:
        sys.exit(f"FAIL: {sys.argv[3]}: {key} differs by {worst:.2e} (relative)")
    print(f"{sys.argv[3]}: {len(a)} {key} values agree within {worst:.1e}")
PY
}

"$bin/train_lm" "${tiny[@]}" --steps 20 --threads 2 --out "$work/n1" 2>/dev/null
"${mpi[@]}" "$bin/train_lm" "${tiny[@]}" --steps 20 --out "$work/n2" 2>/dev/null
compare "$work/n1/metrics.jsonl" "$work/n2/metrics.jsonl" "N=2 vs N=1"
[[ $(grep -c '"loss"' "$work/n2/metrics.jsonl") -eq 20 ]] || fail "expected 20 step lines from rank 0 alone"

status=0
"${mpi[@]}" "$bin/train_lm" --layers 1 --heads 2 --dim 16 --ctx 16 --batch 3 --steps 2 --out "$work/bad" \
  2> "$work/bad.err" || status=$?
[[ $status -eq 2 ]] || fail "indivisible batch: exit $status"
grep -q -- "--batch 3 does not divide among the 2 ranks" "$work/bad.err" || fail "indivisible batch: $(cat "$work/bad.err")"
[[ $(grep -c "error" "$work/bad.err") -eq 1 ]] || fail "indivisible batch: not one line: $(cat "$work/bad.err")"
echo "indivisible batch: one line, exit 2"

"${mpi[@]}" "$bin/train_lm" "${tiny[@]}" --steps 20 --stop-after 10 --out "$work/switch" 2>/dev/null
"$bin/train_lm" --resume "$work/switch" --threads 2 2>/dev/null
compare "$work/n1/metrics.jsonl" "$work/switch/metrics.jsonl" "N=2 then resumed with N=1"
"$bin/train_lm" "${tiny[@]}" --steps 20 --stop-after 10 --threads 2 --out "$work/switch2" 2>/dev/null
"${mpi[@]}" "$bin/train_lm" --resume "$work/switch2" 2>/dev/null
compare "$work/n1/metrics.jsonl" "$work/switch2/metrics.jsonl" "N=1 then resumed with N=2"

sweep=(--norm layernorm rmsnorm none --lr 1e-3 1e-2 --seed 1 --layers 1 --heads 2 --dim 16 --ctx 16 --batch 2
       --steps 20 --eval-iters 2 --no-plot)
"${mpi[@]}" "$bin/compare_norms" "${sweep[@]}" --out "$work/dist" > /dev/null 2>&1
"$bin/compare_norms" "${sweep[@]}" --jobs 1 --threads 1 --out "$work/serial" > /dev/null 2>&1
# Columns up to divergence_quantity: the results (the rest are timings).
diff <(cut -d, -f1-18 "$work/dist/runs.csv") <(cut -d, -f1-18 "$work/serial/runs.csv") > /dev/null ||
  fail "distributed sweep results differ from the serial sweep"
[[ -f "$work/dist/report.md" && $(($(wc -l < "$work/dist/runs.csv") - 1)) -eq 6 ]] || fail "distributed sweep incomplete"
echo "distributed sweep: 6 runs over 2 ranks, results identical to the serial sweep"
echo "OK: MPI data parallelism and distributed sweeps"
