#!/usr/bin/env bash
# CTest "golden: gradients equal PyTorch's (<norm> <placement>)": trains a tiny model for a few
# steps (so the weights are not at their initial values), dumps the gradients of one batch with
# eval_lm, and checks them against PyTorch (tests/golden/against_pytorch.py). scripts/test.sh
# installs PyTorch; without it the test is skipped (exit 77) — except in CI, where a skipped golden
# test would hide a missing install step, so it fails.
set -euo pipefail
bin_dir="$1" norm="$2" placement="$3"
shift 3  # any further arguments go to train_lm (e.g. --z-loss 0.01)
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/torch_env.sh"
cp "$here/../fixtures/text.txt" "$work/text.txt"  # a fixed UTF-8 text (English and Chinese)
"$bin_dir/train_lm" --data "$work/text.txt" --layers 2 --heads 2 --dim 32 --ctx 16 --batch 4 --steps 20 --warmup 2 \
  --lr 3e-3 --norm "$norm" --placement "$placement" --eval-every 0 --threads 2 --out "$work/run" "$@" 2> "$work/train.log" ||
  { tail -3 "$work/train.log"; exit 1; }
"$bin_dir/eval_lm" --checkpoint "$work/run" --data "$work/text.txt" --dump-grads "$work/grads.safetensors" --batch 3 >/dev/null
"$py" "$here/against_pytorch.py" "$work/run" "$work/grads.safetensors"
