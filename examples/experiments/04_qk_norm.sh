#!/usr/bin/env bash
# Experiment 4 — QK-norm: bound the attention logits, and what that buys.
#
# Question: experiment 2 found every no-norm divergence led by an attention logit. Does QK-norm
# (RMSNorm of q and k per head, attention.h) alone keep a pre-norm decoder without block norms
# stable, and does it widen LayerNorm's stable learning-rate range (Wortsman et al. 2023: qk-
# layernorm lowers LR sensitivity; Dehghani et al. 2023)?
#
# Expected: with QK-norm the largest attention logit stays near sqrt(HS)*|w_q||w_k| instead of
# growing into the hundreds; fewer no-norm runs diverge; LR sensitivity falls for both.
#
# Measured (2026-11-30, embedded corpus, 2-core machine of bench/RESULTS.md): 2 x 20 runs, 281 s.
# QK-norm held the largest attention logit to 5.6-13 up to lr 3e-2 with LayerNorm (52 at 1e-1)
# and below 8.3 at every lr without block norms, where without QK-norm LayerNorm reached 418 at
# lr 1e-2 and 76,278 at 1e-1, and no norm 965 already at 1e-3. With LayerNorm it halved the LR sensitivity, 0.956 -> 0.505, by training
# far better at high lr (val 1.49 vs 1.76 at 1e-2, 2.15 vs 3.21 at 1e-1) at an equal best loss
# (1.124 vs 1.117 at 3e-3). Not so for no norm: still 6 of 10 runs diverged (every lr >=
# 1e-2), but no longer led by an attention logit — by a block's gradient norm at 1e-2 and the
# output logits above — so bounding the logits moves the blow-up rather than preventing it; the
# residual stream, which only block norms regulate, still drifts (peak RMS 11.5 vs 9.7).
#
# Re-stated (2026-12-03, one grid of 40 runs, 268 s) under the lab's clean-run rules (a run whose
# attention logits pass 1e4 is not clean): LayerNorm without QK-norm reached a median peak logit
# of 401 / 5,022 / 74,563 at lr 1e-2 / 3e-2 / 1e-1, both runs at 1e-1 past 1e4 (and ending at
# 3.32, above the trained threshold), so its largest clean lr is 3e-2; with QK-RMSNorm at most 32
# at any lr, largest clean lr 1e-1, LR sensitivity 0.941 -> 0.477, best loss 1.119 vs 1.124.
# Without block norms 6/10 diverged either way. Verdict on Wortsman et al.'s claim: partly here
# (lr-scaled weight decay 0.1, 300 steps, 5 rates: not their recipe); experiment 09 tests it on the
# recipe: reproduced.
#   bash examples/experiments/04_qk_norm.sh [--data ../shared/data/tinyshakespeare.txt] [more flags]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/run.sh"
# One grid with QK-norm as an axis: the report compares "qk-norm none / rmsnorm" for each norm.
# (Measured above as two sweeps, before a grid could hold qk-norm; the runs are the same.)
exec "$bin" --dim 128 --norm layernorm none --qk-norm none rmsnorm --lr 1e-3 3e-3 1e-2 3e-2 1e-1 --seed 1 2 --layers 4 \
  --out runs/exp4_qk_norm "$@"
