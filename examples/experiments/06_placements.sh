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
# Measured (2026-12-01, 2 idle cores, 96 runs, 16 min 24 s; a second run reproduced all 96 final
# losses bitwise). No run diverged and none spiked; the failures were stalls at the unigram
# level (3.353):
#   - post-norm never trained, at either depth and any lr (3.353): Xiong et al.'s difficulty,
#     confirmed — warmup 30 and 200 steps are not enough.
#   - DeepNorm rescued it, partly: it trained at lr 1e-3 (2.756 at L8, 2.766 at L12), two of three
#     seeds at 3e-3 at L8 (2.599, 2.957, 3.317; none at L12), and stalled above; its stream stayed
#     at RMS 1.0-1.7.
#   - pre-norm trained best and to the largest lr (2.515 / 2.529 at 3e-3, up to 3e-2; LR
#     sensitivity 0.112 / 0.125), but its stream grew with lr and depth: peak RMS 0.48 -> 165 from
#     lr 1e-3 to 3e-2 at L8, 0.64 -> 318 at L12 — the growth Peri-LN targets.
#   - peri-norm held the stream nearly constant across lr (13.5 -> 19.6 at L8, 20.5 -> 24.6 at L12)
#     and had the lowest LR sensitivity at L8 (0.060), but a worse best loss (2.908 / 2.916) and a
#     smaller largest stable lr (1e-2 / 3e-3) than pre-norm. Partly confirms Kim et al.
#     (stability, bounded growth), not their loss advantage. Best explanation: with gains at 1 each
#     output norm makes every sub-layer add RMS ~1 from step 0, so the stream starts at RMS ~13
#     and the embeddings (RMS 0.03) are drowned; at this size and length pre-norm was never
#     unstable enough for peri's robustness to pay.
#   - Depth 8 -> 12 changed little in 200 steps except pre-norm's stream growth and deepnorm's
#     and peri's largest stable lr (one grid step lower).
#
#   bash examples/experiments/06_placements.sh [more flags]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/run.sh"
need_shakespeare
exec "$bin" --data "$shakespeare" --norm layernorm --placement pre post peri deepnorm --layers 8 12 --dim 64 --heads 4 \
  --steps 200 --lr 1e-3 3e-3 1e-2 3e-2 --seed 1 2 3 --out runs/exp6_placements "$@"
