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
# Measured (2026-12-03, 168 runs, 28 min on 2 cores shared with builds: C32 51 s, C64 128 s,
# C128 382 s, C256 1,124 s). Median peak attention logit at lr 1e-2 / 3e-2 without qk-layernorm:
# 12 / 197 (C32), 51 / 378 (C64), 245 / 2,244 (C128), 1,323 / 35,080 (C256) — growing with width
# at a fixed lr, as in their Figure 1; past 1e4 in 6 of 21 runs at every width, from lr 1e-1 at
# C32-C128 and from 3e-2 at C256. With qk-layernorm at most 111 at any lr (<= 18 up to 3e-2) and
# never past 1e4. LR sensitivity without / with: 0.382 / 0.173 (C32), 0.367 / 0.108 (C64),
# 0.396 / 0.174 (C128), 0.638 / 0.420 (C256); the largest lr with clean runs 3e-2 / 3e-1 at
# C32-C128 and 1e-2 / 1e-1 at C256; best loss equal within 0.05 (2.368 / 2.392, 2.265 / 2.320,
# 2.206 / 2.160, 2.112 / 2.080). At C256 lr 3e-1 both diverged (3/3 each): qk-layernorm removes
# the attention-logit instability, not every one. Reproduced at this scale: the logit growth with
# lr and width, its removal by qk-layernorm, and the lower LR sensitivity; the sensitivity's rise
# with width shows only at C256 (600-step runs: the small rates are under-trained at every width).
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
