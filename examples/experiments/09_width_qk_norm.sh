#!/usr/bin/env bash
# Experiment 9 — Wortsman et al. 2023's Figure 1 at this scale: final loss against learning rate
# for growing widths, with and without qk-layernorm.
#
# Question: Wortsman et al. ("Small-scale proxies for large-scale Transformer training
# instabilities") show that attention logits grow with the learning rate and the model's width
# until the loss diverges, that the LR sensitivity grows with width, and that qk-layernorm
# (a LayerNorm on queries and keys) removes the growth and flattens the loss-vs-lr curve. Do
# widths 32 ... 256 show the trend, and does qk-layernorm remove it?
#
# Literature: their recipe — pre-LN, no biases, AdamW beta2 0.95, independent weight decay 1e-4,
# z-loss 1e-4, head dimension fixed while width grows, warmup, the 7-rate grid 3e-4 ... 3e-1;
# LR sensitivity = E over the grid of min(loss, initial loss) - best loss.
#
# Setup: tinyshakespeare, LayerNorm pre-norm, that recipe; L2, head dimension 32 (C32 H1, C64 H2,
# C128 H4, C256 H8), T64 B8, 600 steps (what fits 30 minutes at C256), warmup 100, cosine to
# lr x 0.1; the 7-rate grid; qk-norm none and layernorm; 3 seeds; one folder per width. The
# report counts runs whose attention logits passed 1e4 and tables the peak per lr.
#
# Measured: see docs/experiments.md (experiment 09) for the numbers of the last run.
#
#   bash examples/experiments/09_width_qk_norm.sh [more flags]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/run.sh"
need_shakespeare
for dim in 32 64 128 256; do
  "$bin" --data "$shakespeare" --norm layernorm --qk-norm none layernorm --bias false --beta2 0.95 \
    --weight-decay 1e-4 --weight-decay-mode independent --z-loss 1e-4 \
    --layers 2 --dim "$dim" --heads $((dim / 32)) --batch 8 --steps 600 --warmup 100 --evals 4 \
    --lr 3e-4 1e-3 3e-3 1e-2 3e-2 1e-1 3e-1 --seed 1 2 3 --jobs 2 --out "runs/exp9_width_qk/C$dim" "$@"
done
echo "Reports: runs/exp9_width_qk/C{32,64,128,256}/report.md"
