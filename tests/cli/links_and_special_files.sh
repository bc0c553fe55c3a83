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
if "$bin_dir/train_lm" "${tiny[@]}" --out run2 > log 2>&1; then fail "train_lm replaced a config.json link"; fi
grep -q "config.json': it is a symbolic link, not a regular file" log || { cat log; fail "no clear error for a config.json link"; }
[[ "$(cat victim)" == "precious" && -L run2/config.json ]] || fail "the config.json link or its victim was touched"

# Outputs never replace a device: --dump-grads onto a character device is refused, the device kept.
for _ in $(seq 20); do echo "the quick brown fox jumps over the lazy dog."; done > text.txt
"$bin_dir/train_lm" "${tiny[@]}" --data text.txt --out run5 > log 2>&1 || { cat log; fail "train_lm"; }
mknod chardev c 1 3 2>/dev/null || ln -s /dev/null chardev  # /dev/null's numbers; a link to it without mknod rights
if "$bin_dir/eval_lm" --checkpoint run5 --data text.txt --dump-grads chardev --batch 1 > log 2>&1; then
  fail "eval_lm wrote its gradients over a device"; fi
grep -Eq "chardev': it is a (character device|symbolic link), not a regular file" log || { cat log; fail "no clear error for a device"; }
[[ -c chardev || -L chardev ]] || fail "the device was replaced"
# ... nor a file of the checkpoint it reads.
if "$bin_dir/eval_lm" --checkpoint run5 --data text.txt --dump-grads run5/model.safetensors --batch 1 > log 2>&1; then
  fail "eval_lm wrote over its checkpoint's weights"; fi
grep -q "is inside the checkpoint folder" log || { cat log; fail "no clear error for --dump-grads into the checkpoint"; }

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
