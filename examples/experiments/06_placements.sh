#!/usr/bin/env bash
# Experiment 6 — where the norm sits: pre, post, peri (sandwich) and DeepNorm, at depth 8 and 12.
#
# Question: how do the four placements compare in residual-stream growth with depth, largest
# stable learning rate, LR sensitivity and loss spikes?
#
# Literature: pre-norm trains without warmup but its residual stream grows with depth (Xiong et
# al. 2020); post-norm keeps the stream at unit scale but is hard to train deep (gradients near
# the output are large at init); Peri-LN (Kim et al. 2025: a norm on each sub-layer's input and
# output) keeps the stream's growth in check and is reported more stable than pre-norm at high
# lr; DeepNorm (Wang et al. 2022: post-norm with X alpha + F(X), alpha = (2N)^(1/4), and the
# value map, the attention's output and both MLP maps Xavier-initialised with gain
# beta = (8N)^(-1/4)) makes post-norm trainable to 1000 layers.
#
# Setup: Shakespeare, LayerNorm, L8 and L12, H4 C64 T64 B8, 200 steps, AdamW, warmup 30, cosine
# to lr x 0.1, lr 1e-3 ... 3e-2, 3 seeds: 96 runs.
#
# Measured: see the README's experiments table (filled in from runs/exp6_placements/report.md).
#
#   bash examples/experiments/06_placements.sh [more flags]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/run.sh"
need_shakespeare
exec "$bin" --data "$shakespeare" --norm layernorm --placement pre post peri deepnorm --layers 8 12 --dim 64 --heads 4 \
  --steps 200 --lr 1e-3 3e-3 1e-2 3e-2 --seed 1 2 3 --out runs/exp6_placements "$@"
