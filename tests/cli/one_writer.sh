#!/usr/bin/env bash
# CTest "cli: one writer per run folder; readers never break a live run": while train_lm writes a
# checkpoint every step, a second train_lm on the same --out is refused naming the holder's pid,
# and eval_lm reading the folder again and again leaves the writer unharmed (it once deleted the
# writer's unfinished files: "cannot rename ... model.safetensors.new"). The same for sweeps.
set -euo pipefail
bin_dir="$1"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
tiny=(--layers 1 --heads 2 --dim 16 --ctx 16 --batch 2 --eval-every 0 --threads 1)
for _ in $(seq 40); do echo "the quick brown fox jumps over the lazy dog."; done > text.txt

"$bin_dir/train_lm" "${tiny[@]}" --data text.txt --steps 1000 --checkpoint-every 1 --out run > writer.log 2>&1 &
writer=$!
for _ in $(seq 200); do [[ -f run/checkpoint.json ]] && break; sleep 0.05; done
[[ -f run/checkpoint.json ]] || fail "the writer wrote no checkpoint"

if "$bin_dir/train_lm" "${tiny[@]}" --steps 5 --out run > second.log 2>&1; then fail "a second writer was allowed"; fi
grep -q "'run' is in use by another tapegrad process (pid $writer)" second.log || { cat second.log; fail "unclear refusal"; }
# The library's writers take the lock themselves: Python's Trainer.save into the live run's folder
# is refused as a second train_lm is.
py_pkg="$(cd "$bin_dir/../python" 2>/dev/null && pwd || true)"
if [[ -n "$py_pkg" && -f "$py_pkg/tapegrad/__init__.py" ]]; then
  if PYTHONPATH="$py_pkg" /usr/bin/python3 -c "
import tapegrad as tg
t = tg.lm.Trainer(tg.lm.TrainConfig(layers=1, heads=2, dim=16, ctx=16, batch=2, steps=2, warmup=1))
t.save('run')" > pysave.log 2>&1; then fail "Trainer.save into a live run's folder was allowed"; fi
  grep -q "'run' is in use by another tapegrad process (pid $writer)" pysave.log || { cat pysave.log; fail "unclear refusal of Trainer.save"; }
fi

reads=0 tries=0  # a read may miss a commit (and fail); it must never break one
while kill -0 "$writer" 2>/dev/null && ((tries < 200)); do
  if "$bin_dir/eval_lm" --checkpoint run --data text.txt > /dev/null 2>&1; then reads=$((reads + 1)); fi
  tries=$((tries + 1))
done
wait "$writer" || { cat writer.log; fail "the writer failed while readers read (after $reads reads)"; }
((reads >= 3)) || fail "too few successful reads during the run ($reads of $tries)"
"$bin_dir/eval_lm" --checkpoint run --data text.txt > /dev/null || fail "the finished run does not load"
[[ ! -e run/model.safetensors.new ]] || fail "a finished run left unfinished files"

"$bin_dir/compare_norms" --norm none --lr 1e-3 --seed 1 --steps 300 --eval-iters 1 --layers 1 --heads 2 --dim 16 \
  --ctx 16 --batch 2 --jobs 1 --no-plot --out sweep > sweep.log 2>&1 &
sweeper=$!
for _ in $(seq 200); do [[ -f sweep/.tapegrad.lock ]] && break; sleep 0.05; done
if "$bin_dir/compare_norms" --norm none --lr 1e-3 --steps 5 --no-plot --out sweep > sweep2.log 2>&1; then
  fail "a second sweep on the same folder was allowed"
fi
grep -q "'sweep' is in use by another tapegrad process (pid $sweeper)" sweep2.log || { cat sweep2.log; fail "unclear sweep refusal"; }
wait "$sweeper" || { cat sweep.log; fail "the first sweep failed"; }
if [[ -n "$py_pkg" && -f "$py_pkg/tapegrad/__init__.py" ]]; then
  # A Python sweep into a live sweep's folder (the same grid, so the refusal is the lock's): the
  # live sweep runs until killed, so it is alive whatever the machine's load.
  "$bin_dir/compare_norms" --norm none --lr 1e-3 --seed 1 --steps 100000000 --eval-iters 1 --layers 1 --heads 2 --dim 16 \
    --ctx 16 --batch 2 --jobs 1 --no-plot --out long > long.log 2>&1 &
  long=$!
  for _ in $(seq 200); do [[ -f long/sweep.json ]] && break; sleep 0.05; done
  if PYTHONPATH="$py_pkg" /usr/bin/python3 -c "
import tapegrad as tg
tg.lab.sweep('long', axes={'norm': ['none'], 'lr': [1e-3], 'seed': [1]}, plots=False, steps=100000000, eval_iters=1,
             layers=1, heads=2, dim=16, ctx=16, batch=2)" > pysweep.log 2>&1
  then kill "$long"; wait "$long" 2>/dev/null || true; fail "a Python sweep into a live sweep's folder was allowed"; fi
  kill "$long" 2>/dev/null || true
  wait "$long" 2>/dev/null || true  # it stops and writes its folder before the trap removes it
  grep -q "'long' is in use by another tapegrad process (pid $long)" pysweep.log || { cat pysweep.log; fail "unclear refusal of lab.sweep"; }
fi
echo "OK: one writer per folder ($reads of $tries reads succeeded during the run)"
