#!/usr/bin/env bash
# CTest "cli: links and special files are never followed or waited on": a victim file behind a
# symbolic link planted where train_lm writes its metrics or config must come out untouched; a
# FIFO or /dev/zero as --data must be refused at once with a clear error (not hang, not read
# until memory runs out).
set -euo pipefail
bin_dir="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
tiny=(--layers 1 --heads 2 --dim 16 --ctx 16 --batch 2 --steps 2 --eval-every 0 --threads 1)
fail() { echo "FAIL: $*"; exit 1; }

echo "precious" > victim
mkdir run1 && ln -s "$work/victim" run1/metrics.jsonl
if "$bin_dir/train_lm" "${tiny[@]}" --out run1 > log 2>&1; then fail "train_lm wrote through a metrics.jsonl link"; fi
grep -q "metrics.jsonl': it is a symbolic link" log || { cat log; fail "no clear error for a metrics.jsonl link"; }
[[ "$(cat victim)" == "precious" ]] || fail "the victim behind metrics.jsonl was modified"

mkdir run2 && ln -s "$work/victim" run2/config.json
"$bin_dir/train_lm" "${tiny[@]}" --out run2 > log 2>&1 || { cat log; fail "train_lm failed with a config.json link"; }
[[ "$(cat victim)" == "precious" ]] || fail "the victim behind config.json was modified"
[[ -f run2/config.json && ! -L run2/config.json ]] || fail "config.json should have replaced the link with a file"

mkfifo fifo
status=0
timeout 20 "$bin_dir/train_lm" "${tiny[@]}" --data fifo --out run3 > log 2>&1 || status=$?
[[ $status -ne 124 ]] || fail "train_lm hung on a FIFO as --data"
grep -q "not a regular file" log || { cat log; fail "no clear error for a FIFO as --data"; }

status=0
timeout 20 "$bin_dir/train_lm" "${tiny[@]}" --data /dev/zero --out run4 > log 2>&1 || status=$?
[[ $status -ne 124 && $status -ne 0 ]] || fail "train_lm read /dev/zero (status $status)"
grep -q "not a regular file" log || { cat log; fail "no clear error for /dev/zero as --data"; }
echo "OK: links and special files"
