#!/usr/bin/env bash
# CTest "lab: a sweep killed at any write boundary leaves each run done or trained again": a sweep
# SIGKILLed right after the 2nd run's curve, record or proof is written, then continued. A run
# counts as done only once its proof is written: the restart skips exactly the runs with a proof,
# trains the rest, and its runs.csv holds the same four losses as a sweep never killed.
set -euo pipefail
killer="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
losses() { tail -n +2 "$1/runs.csv" | cut -d, -f1,12,13 | sort; }  # run_id, final_train_loss, final_val_loss
"$killer" "$work/clean" none 0 > "$work/clean.out" 2>&1 || fail "the sweep without a kill failed: $(cat "$work/clean.out")"
[[ $(grep -c '^trained ' "$work/clean.out") -eq 4 ]] || fail "the clean sweep trained $(grep -c '^trained ' "$work/clean.out") runs, not 4"
for boundary in curve record proof; do
  out="$work/$boundary"
  status=0
  "$killer" "$out" "$boundary" 2 > "$work/$boundary.killed" 2>&1 || status=$?
  [[ $status -eq 137 ]] || fail "$boundary: the sweep was to die by SIGKILL (137), exited $status"
  proofs=$(find "$out/records" -name '*.json' | wc -l)
  want=$([[ $boundary == proof ]] && echo 2 || echo 1)
  [[ $proofs -eq $want ]] || fail "$boundary: $proofs proofs after the kill, expected $want"
  "$killer" "$out" none 0 > "$work/$boundary.out" 2> "$work/$boundary.err" || fail "$boundary: the restart failed: $(cat "$work/$boundary.err")"
  skipped=$(grep -c '^skipped ' "$work/$boundary.out" || true)
  trained=$(grep -c '^trained ' "$work/$boundary.out" || true)
  [[ $skipped -eq $proofs && $trained -eq $((4 - proofs)) ]] ||
    fail "$boundary: $proofs runs proven before the kill; the restart skipped $skipped and trained $trained"
  if [[ $boundary == record ]]; then
    grep -q "(its proof) is missing: training run .* again" "$work/$boundary.err" ||
      fail "record: the run without a proof was not named as trained again: $(cat "$work/$boundary.err")"
  fi
  [[ $(find "$out/records" -name '*.json' | wc -l) -eq 4 ]] || fail "$boundary: not every run has its proof after the restart"
  [[ "$(losses "$out")" == "$(losses "$work/clean")" ]] ||
    fail "$boundary: runs.csv differs from the sweep never killed:"$'\n'"$(losses "$out")"$'\n'"vs"$'\n'"$(losses "$work/clean")"
  echo "$boundary: killed after the 2nd run's $boundary with $proofs proven; restart skipped $skipped, trained $trained, losses as never killed"
done
echo "OK: every write boundary"
