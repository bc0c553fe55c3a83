#!/usr/bin/env bash
# CTest "faults: signals, killed sweeps and NaNs lose nothing":
#   1. SIGTERM / SIGINT: train_lm saves a checkpoint, says so, exits 143 / 130; --resume continues.
#   2. A compare_norms sweep SIGKILLed mid-way and restarted redoes only the unfinished runs.
#   3. A run that diverges (NaN) stops with an error and never writes NaN weights into a
#      checkpoint: the last checkpoint still evaluates to a finite loss.
# (The bitwise resume after SIGKILL is tests/examples/train_lm_resume.sh.)
set -euo pipefail
bin="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tiny=(--layers 1 --heads 2 --dim 16 --ctx 16 --batch 2 --eval-every 0 --threads 1)
fail() { echo "FAIL: $*"; exit 1; }

for sig in TERM INT; do
  out="$work/sig_$sig"
  "$bin/train_lm" "${tiny[@]}" --steps 1000000 --checkpoint-every 0 --out "$out" 2> "$work/err_$sig" &
  pid=$!
  for _ in $(seq 100); do [[ -s "$out/metrics.jsonl" ]] && break; sleep 0.1; done
  sleep 0.3
  kill -s "$sig" "$pid"
  status=0
  wait "$pid" || status=$?
  expect=$([[ $sig == TERM ]] && echo 143 || echo 130)
  [[ $status -eq $expect ]] || fail "SIG$sig: exit $status, expected $expect"
  grep -q "stopped by signal" "$work/err_$sig" || fail "SIG$sig: no message ($(cat "$work/err_$sig"))"
  step=$(python3 -c "import json; print(json.load(open('$out/checkpoint.json'))['step'])")
  [[ $step -gt 0 ]] || fail "SIG$sig: checkpoint at step $step"
  "$bin/train_lm" --resume "$out" --stop-after $((step + 2)) 2>/dev/null || fail "SIG$sig: resume failed"
  echo "SIG$sig: checkpoint at step $step, exit $status, resumed"
done

sweep=(--norm layernorm rmsnorm none --lr 1e-3 3e-3 --seed 1 --layers 1 --heads 2 --dim 16 --ctx 16 --batch 2
       --steps 3000 --eval-iters 2 --jobs 1 --threads 1 --no-plot --out "$work/sweep")
"$bin/compare_norms" "${sweep[@]}" > /dev/null 2>&1 &
pid=$!
records() { find "$work/sweep/records" -name '*.json' 2>/dev/null | wc -l; }  # a run is done once its proof is written
# Each run is ~3000 steps (~0.35 s here, more under sanitizers) so the kill lands mid-sweep even when
# polled coarsely; a sweep that still outruns the poll is reported as such, not as lost work.
for _ in $(seq 1500); do [[ $(records) -ge 2 ]] && break; sleep 0.02; done
kill -9 "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
done_before=$(records)
[[ $done_before -ge 1 && $done_before -lt 6 ]] ||
  fail "sweep: the kill should land mid-sweep, but $done_before of 6 runs were done (runs too short or too slow?)"
"$bin/compare_norms" "${sweep[@]}" > /dev/null 2> "$work/sweep_err"
skipped=$(grep -c "(done earlier)" "$work/sweep_err" || true)
rows=$(($(wc -l < "$work/sweep/runs.csv") - 1))
unique=$(tail -n +2 "$work/sweep/runs.csv" | cut -d, -f1 | sort -u | wc -l)
[[ $skipped -eq $done_before && $rows -eq 6 && $unique -eq 6 ]] ||
  fail "sweep: $done_before done before the kill, $skipped skipped on restart, $rows rows ($unique unique)"
echo "sweep: killed after $done_before of 6 runs; restart skipped $skipped, finished with $rows"

out="$work/nan"
status=0
# No norm, no clipping, lr 50: the weights stay finite after step 1 (a checkpoint), step 2 is NaN.
"$bin/train_lm" --layers 2 --heads 2 --dim 32 --ctx 16 --batch 2 --eval-every 0 --threads 1 --norm none --lr 50 \
  --clip 0 --warmup 1 --steps 200 --checkpoint-every 1 --out "$out" 2> "$work/err_nan" || status=$?
[[ $status -eq 1 ]] && grep -q "diverged at step" "$work/err_nan" || fail "NaN run: exit $status ($(tail -1 "$work/err_nan"))"
grep -q "the last checkpoint in '$out' is intact" "$work/err_nan" || fail "NaN run: $(tail -1 "$work/err_nan")"
# The same divergence before any checkpoint was written must not claim one is intact.
status=0
"$bin/train_lm" --layers 2 --heads 2 --dim 32 --ctx 16 --batch 2 --eval-every 0 --threads 1 --norm none --lr 50 \
  --clip 0 --warmup 1 --steps 200 --out "$work/nan_early" 2> "$work/err_nan_early" || status=$?
[[ $status -eq 1 ]] && grep -q "no checkpoint was saved yet" "$work/err_nan_early" ||
  fail "NaN run without a checkpoint: exit $status ($(tail -1 "$work/err_nan_early"))"
python3 - "$out" <<'PY' || fail "NaN run: the checkpoint holds non-finite weights"
import json, math, struct, sys
b = open(sys.argv[1] + "/model.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
vals = struct.unpack(f"<{(len(b) - 8 - n) // 4}f", b[8 + n:])
sys.exit(0 if all(math.isfinite(v) for v in vals) else 1)
PY
echo "NaN run: stopped with '$(grep -o 'diverged at step [0-9]*' "$work/err_nan")'; checkpoint weights all finite"
# Killed mid-write again and again: what each kill leaves half-written is removed by the next
# start, so leftovers never pile up, and a run that ends cleanly leaves none.
out="$work/kills"
"$bin/train_lm" --layers 1 --heads 2 --dim 16 --ctx 16 --batch 2 --eval-every 0 --threads 1 --steps 2 --out "$out" 2> /dev/null
temps() { find "$out" -name '.*.tapegrad-tmp.*' -o -name '.tapegrad-write-test.*' -o -name '*.new' | wc -l; }
most=0 seen=0
for i in $(seq 20); do
  "$bin/train_lm" --resume "$out" --steps 100000000 --checkpoint-every 1 2> /dev/null & pid=$!
  sleep "0.$((i % 3 + 1))$((i % 7))"
  kill -9 "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  n=$(temps); seen=$((seen + n)); ((n > most)) && most=$n
done
# The last kill may have left a complete checkpoint not yet committed: the next start commits it,
# so the run may resume one checkpoint later than checkpoint.json reads now — stop two steps on.
step=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['step'])" "$out/checkpoint.json")
"$bin/train_lm" --resume "$out" --steps 100000000 --stop-after $((step + 2)) 2> "$work/err_kills" ||
  fail "kills: the run does not resume ($(tail -1 "$work/err_kills"))"
[[ $(temps) -eq 0 && $most -le 4 ]] || fail "kills: temporary files pile up ($most at once, $(temps) after a clean finish)"
echo "kills: 20 SIGKILLs mid-write left $seen temporary files in all, at most $most at once; none after a clean finish"
echo "OK: faults lose nothing"
