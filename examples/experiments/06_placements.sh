#!/usr/bin/env bash
# Experiment 6 — where the norm sits: pre, post, Peri-LN and DeepNorm on their papers' recipes, at
# depth 8 and 12.
#
# Question: how do the four placements compare in final loss, largest stable learning rate, LR
# sensitivity, loss spikes and residual-stream growth with depth?
#
# Literature: pre-norm trains without warmup but its residual stream grows with depth (Xiong et
# al. 2020); post-norm keeps the stream at unit scale but needs warmup (experiment 03). Peri-LN
# (Kim et al. 2025: a norm on each sub-layer's input and output, and on the embeddings) is
# reported to keep the stream's growth in check and to train better and more stably than pre-norm
# across learning rates and seeds. DeepNorm (Wang et al. 2022: post-norm with X alpha + F(X),
# alpha = (2N)^(1/4), the value map, attention output and MLP maps Xavier-initialised with gain
# beta = (8N)^(-1/4); their decoder scales token embeddings by sqrt(d) and has no final norm)
# makes post-norm trainable to 1000 layers.
#
# Setup: Shakespeare, LayerNorm, L8 and L12, H4 C64 T64 B8, 2,000 steps, AdamW (weight decay 0.1),
# warmup 500 steps (experiment 03's longest: post-norm's need of warmup is 03's subject, not this
# one's, so every placement gets the warmup that let post-norm train), cosine to lr x 0.1, the
# 7-rate grid of Wortsman et al. 2023 (3e-4 ... 3e-1), 3 seeds. `--recipe papers` runs Peri-LN on
# peri-ln-paper (the embedding norm) and DeepNorm on deepnorm-paper (embeddings x sqrt(d), no
# final norm); pre and post as given. One folder per depth (84 runs each).
#
# Measured: see docs/experiments.md (filled in from the run below).
#
#   bash examples/experiments/06_placements.sh [more flags]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/run.sh"
need_shakespeare
for layers in 8 12; do
  "$bin" --data "$shakespeare" --norm layernorm --placement pre post peri deepnorm --recipe papers \
    --layers "$layers" --dim 64 --heads 4 --batch 8 --steps 2000 --warmup 500 --evals 8 \
    --lr 3e-4 1e-3 3e-3 1e-2 3e-2 1e-1 3e-1 --seed 1 2 3 --out "runs/exp6_placements/L$layers" "$@"
done
echo "Reports: runs/exp6_placements/L8/report.md and runs/exp6_placements/L12/report.md"
