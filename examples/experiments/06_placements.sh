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
# Measured (168 runs; L8 47 min, L12 65 min on 2 cores shared with builds). No run diverged.
#   - Peri-LN on its recipe had the lowest loss at both depths in this run (1.869 at L8, 1.883 at
#     L12, lr 1e-2, against pre 1.919 / 1.917 and post 1.907 / 1.892; its spread: below), the lowest LR sensitivity (0.333 / 0.307
#     against pre 0.401 / 0.402, post 0.731 / 0.936), no spikes or collapses, and held the
#     residual stream to RMS 175 / 229 at lr 3e-1 where pre-norm's grew to 50,600 / 107,000.
#     Reproduced at this scale. Its attention logits still passed 1e4 in 6 of 21 runs (lr >= 3e-2),
#     as pre-norm's did: that growth is QK-norm's subject (experiment 04), not Peri-LN's.
#   - Post-norm with 500 warmup steps trained up to 1e-2 at L8 and 3e-3 at L12; DeepNorm on its
#     recipe up to 1e-2 at both (best 1.894 / 1.884, LR sensitivity 0.745 / 0.733), its stream at
#     RMS <= 6.6. Partly: one grid step wider than post-norm at L12, no different at L8; the claim
#     (hundreds of layers) is beyond this scale.
#   - Pre-norm trained up to 3e-2 cleanly (1e-1 ended below the threshold but with collapsed runs
#     and attention logits past 1e4); its stream grows with lr and depth, as Xiong et al. say.
#
# Re-run with the seeds' spread (2026-12-06; `06_table.py` -> runs/exp6_placements/table.md): pre,
# post and peri, 3 seeds, L8 at lr 1e-3 3e-3 1e-2 3e-2 and L12 at 1e-3 3e-3 1e-2 (each
# placement's best in the 7-rate run bracketed; pass those --lr and --placement to this script),
# 63 runs, ~50 min on 2 shared cores. Best val, mean ± std: L8 peri 1.878 ± 0.005 (lr 1e-2), pre
# 1.924 ± 0.002 (1e-2), post 1.912 ± 0.014 (3e-3) — peri lower than both beyond twice the
# standard error; L12 peri 1.874 ± 0.008, pre 1.920 ± 0.021 (lower), post 1.894 ± 0.023 (3e-3;
# -0.020 within 2 se 0.028). Peri-LN's lower loss: partly (not against post-norm at L12).
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
