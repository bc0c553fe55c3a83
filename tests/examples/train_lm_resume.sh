#!/usr/bin/env bash
# CTest "train_lm: --resume continues bitwise as if never stopped": runs train_lm for 24 steps
# straight, and the same 24-step run stopped after step 12 then resumed, and requires identical
# loss and grad_norm values for every step of metrics.jsonl (each step logged once). The
# stopped run is also killed with SIGKILL mid-way once, to show a kill loses nothing but time.
set -euo pipefail
bin="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
flags=(--layers 2 --heads 2 --dim 32 --ctx 32 --batch 4 --warmup 4 --eval-every 0 --checkpoint-every 6 --threads 2)
"$bin" "${flags[@]}" --steps 24 --out "$work/straight" 2>/dev/null
"$bin" "${flags[@]}" --steps 24 --stop-after 12 --out "$work/split" 2>/dev/null
# Resume, and SIGKILL it at an arbitrary moment (wherever the kill lands, checkpoints are whole)...
"$bin" --resume "$work/split" --steps 24 --checkpoint-every 3 2>/dev/null &
pid=$!
sleep 0.25
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
# ...then resume again until the end (unless the killed run had already finished).
if ! grep -q '"step": *24' "$work/split/checkpoint.json"; then
  "$bin" --resume "$work/split" --steps 24 2>/dev/null
fi
extract() { python3 -c "
import json, sys
for line in open(sys.argv[1]):
    j = json.loads(line)
    if 'loss' in j: print(j['step'], repr(j['loss']), repr(j['grad_norm']))
" "$1"; }
extract "$work/straight/metrics.jsonl" > "$work/a"
extract "$work/split/metrics.jsonl" > "$work/b"
if ! diff "$work/a" "$work/b"; then echo "FAIL: resumed losses differ"; exit 1; fi
[[ $(wc -l < "$work/a") -eq 24 ]] || { echo "FAIL: expected 24 steps"; exit 1; }
echo "OK: 24 steps identical after resume"
