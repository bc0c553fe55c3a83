#!/usr/bin/env bash
# CTest "train_lm: bitwise the same wherever the data lies": the same 24-step run, with 1 and with
# 2 threads, repeated with every heap buffer moved off the 64-byte line (TAPEGRAD_BUFFER_OFFSET,
# lib/tapegrad/buffer.h) and the main stack moved by environment padding (under ASLR the
# environment's size is what moved the stack between the ASan runs that disagreed). Every step's
# loss and grad_norm must be the same bits (Python's repr round-trips a double exactly).
set -euo pipefail
bin="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
flags=(--layers 2 --heads 2 --dim 32 --ctx 32 --batch 4 --warmup 4 --eval-every 0 --steps 24)
extract() { python3 -c "
import json, sys
for line in open(sys.argv[1]):
    j = json.loads(line)
    if 'loss' in j: print(j['step'], repr(j['loss']), repr(j['grad_norm']))
" "$1"; }
runs=0
for threads in 1 2; do
  ref=""
  for placement in "0 0" "5 1" "11 2" "3 3" "14 7"; do
    read -r offset pad <<<"$placement"
    out="$work/t$threads-o$offset-p$pad"
    env TAPEGRAD_BUFFER_OFFSET="$offset" TAPEGRAD_STACK_PAD="$(printf '%*s' $((pad * 16)) '')" \
      "$bin" "${flags[@]}" --threads "$threads" --out "$out" 2>/dev/null
    extract "$out/metrics.jsonl" > "$out.txt"
    [[ $(wc -l < "$out.txt") -eq 24 ]] || { echo "FAIL: $out: expected 24 steps"; exit 1; }
    if [[ -z "$ref" ]]; then
      ref="$out.txt"
    elif ! diff "$ref" "$out.txt"; then
      echo "FAIL: --threads $threads, buffer offset $offset floats, stack pad $((pad * 16)) bytes differs from offset 0"
      exit 1
    fi
    runs=$((runs + 1))
  done
done
echo "OK: $runs runs of 24 steps, bitwise identical per thread count"
