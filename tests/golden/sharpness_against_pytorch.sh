#!/usr/bin/env bash
# CTest "golden: sharpness equals PyTorch's": trains a tiny model for a few steps, measures the
# top Hessian eigenvalue, plain and Adam-preconditioned, with `eval_lm --sharpness` on the batch
# --dump-grads documents, and checks both against an independent computation in PyTorch
# (tests/golden/sharpness_against_pytorch.py). Skipped (77) without PyTorch, except in CI.
set -euo pipefail
bin_dir="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/torch_env.sh"
cp "$here/../fixtures/text.txt" "$work/text.txt"
"$bin_dir/train_lm" --data "$work/text.txt" --layers 1 --heads 2 --dim 16 --ctx 8 --batch 4 --steps 30 --warmup 2 \
  --lr 1e-2 --eval-every 0 --threads 1 --out "$work/run" 2> "$work/train.log" || { tail -3 "$work/train.log"; exit 1; }
"$bin_dir/eval_lm" --checkpoint "$work/run" --data "$work/text.txt" --dump-grads "$work/grads.safetensors" --batch 2 \
  --sharpness --sharpness-iters 200 --threads 1 > "$work/eval.txt"
"$py" "$here/sharpness_against_pytorch.py" "$work/run" "$work/grads.safetensors" "$work/eval.txt"
