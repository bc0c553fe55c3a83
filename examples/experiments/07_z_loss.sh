#!/usr/bin/env bash
# Experiment 7 — z-loss: does it keep the output logits bounded at high learning rates, and at
# what cost in loss?
#
# Question: z-loss adds coef * log^2 Z per token (Z the softmax normaliser of the LM head's
# logits; PaLM, Chowdhery et al. 2022; Wortsman et al. 2023). Does it hold the output logits
# down as the learning rate grows, keep runs from diverging, and what does it cost?
#
# Literature: Wortsman et al. 2023 find output-logit divergence (logits drifting far negative
# so that log Z runs away) at high lr in small models, removed by z-loss 1e-4 at no cost in
# loss; PaLM uses 1e-4.
#
# Setup: Shakespeare, L4 H4 C64 T64 B8, 300 steps, AdamW, warmup 30, cosine to lr x 0.1, 3 seeds;
# LayerNorm and no norm (no final norm either: nothing bounds the head's input); z-loss 0, 1e-4
# and 1e-2; lr 3e-3 ... 1e-1.
#
# Measured (2026-12-01, 2 cores, 72 runs, 381 s). With LayerNorm (and its final norm) the output
# logits were bounded without z-loss — peak 7.4-8.8 at every lr up to 1e-1 — and no run diverged;
# z-loss 1e-2 lowered them to 3.5-5.5 at a cost of 0.019 in best loss (2.438 -> 2.457), 1e-4 left
# them (8.7) and the loss (2.452, within seed noise) unchanged. Without a norm, z-loss changed
# nothing that mattered: 6 of 12 runs diverged at every coefficient (every run at lr >= 3e-2), the
# output logits still ran to 1e5-1e13 before the divergence, and each divergence was led by the
# last block's attention logits (blocks.3.max_logit), not by log Z. Partly refuted: z-loss bounds
# log Z, so it pulls output logits down only when they are the thing growing; here they were
# either already bounded by the final norm, or swept along by an attention-logit blow-up that
# z-loss does not touch (experiment 04: QK-norm bounds those). Wortsman et al. saw output-logit
# divergence in models with norms, at larger scale and longer training than 300 steps.
#
#   bash examples/experiments/07_z_loss.sh [more flags]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/run.sh"
need_shakespeare
exec "$bin" --data "$shakespeare" --norm layernorm none --z-loss 0 1e-4 1e-2 --layers 4 --dim 64 --heads 4 --steps 300 \
  --lr 3e-3 1e-2 3e-2 1e-1 --seed 1 2 3 --out runs/exp7_z_loss "$@"
