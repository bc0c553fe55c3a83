#!/usr/bin/env bash
# Experiment 8 — the edge of stability, with and without a norm.
#
# Question: does the sharpness — the top eigenvalue of the loss Hessian — rise until it reaches
# the optimizer's stability threshold and hover there, and does a norm keep it below? Does a run
# diverge when its sharpness crosses the threshold?
#
# Literature: Cohen et al. 2021: under (full-batch) gradient descent with step η, the sharpness
# rises ("progressive sharpening") to 2/η and hovers there while the loss keeps falling, non-
# monotonically. Cohen et al. 2022: under Adam the preconditioned sharpness λ₁(P⁻¹H) does the same
# at (2 + 2β₁)/((1 − β₁)η) = 38/η (β₁ = 0.9).
#
# For mini-batch training the quantity that settles at 2/η is not λ₁ of the full loss but the
# batch sharpness E_B[g_Bᵀ H_B g_B / g_Bᵀ g_B] (Andreyev & Beneventano 2024, "Edge of
# Stochastic Stability"). Neither paper predicts divergence on crossing the threshold.
#
# Setup (Cohen et al.'s conditions): embedded corpus, L2 H2 C32 T32, constant lr (no warmup, no
# decay), no clipping, no weight decay; no norm vs LayerNorm vs RMSNorm; 3 seeds; 300 steps.
#   (a) full-batch gradient descent: every step on the same 32 sequences (--full-batch), SGD
#       without momentum at lr 0.3 and 1; λ₁ of that very loss every 5 steps against 2/η
#   (b) full-batch Adam (β₁ 0.9) at lr 3e-3, 1e-2: λ₁(P⁻¹H) of that loss every 5 steps against 38/η
#   (c) mini-batch SGD (batches of 16) at lr 0.3, 1: every 10 steps the batch sharpness over 4
#       fresh batches against 2/η, beside λ₁ of a fixed batch of 32
# Sharpness in float64, at most 10 Lanczos steps (lm/tapegrad/lm/sharpness.h): what fits the
# 30-minute budget (a measurement costs 20-40 training steps). plots/sharpness.png
# in each folder draws sharpness / threshold and the loss per lr.
#
# Measured (2026-12-03, 54 runs; gd 304 s, adam 708 s, sgd_minibatch 439 s on 2 cores shared
# with builds; sharpness / threshold, mean over 3 seeds, from curves.csv). No run diverged but one
# LayerNorm run at GD lr 1.
# (a) Full-batch GD. Without a norm at lr 0.3: progressive sharpening 0.06 -> 0.93 of 2/η by step
#     100, then at the edge, 1.0-1.3 to step 300, the loss falling non-monotonically (period-2
#     oscillation in plots/sharpness.png) — Cohen et al. 2021's picture. At lr 1 it rose to 1.5-2.0.
#     With LayerNorm or RMSNorm it sat above the edge from step ~25 (1.6-2.9 at lr 0.3, 1.5-2.7 at
#     lr 1) while the loss still fell (4.84 -> 1.74-1.76): with norms the sharpness does not stop at
#     2/η here. Partly.
# (b) Full-batch Adam. λ₁(P⁻¹H) hovered at 0.8-1.2 of 38/η from step ~50 with LayerNorm and RMSNorm
#     at both lrs; without a norm at lr 3e-3 it fell to 0.03 after the first steps, sharpened back
#     to 0.96 by step 150 and hovered at 0.83-1.05 — Cohen et al. 2022's picture; at lr 1e-2 it
#     overshot to 1.9-7.6. Reproduced.
# (c) Mini-batch SGD (batches of 16): the batch sharpness hovered at 0.7-1.4 of 2/η at lr 1 for all
#     three (none 0.73-1.38, LayerNorm 0.70-1.23, RMSNorm 0.66-1.28) and stayed below at lr 0.3
#     (0.2-0.3 without a norm, 0.6-1.0 with one) in 300 steps; the top eigenvalue of a fixed batch
#     of 32 sat above it (1.3-2.3 at lr 1), as the directional curvature must. Partly
#     (Andreyev & Beneventano 2024): at the edge at the larger step only.
#
#   bash examples/experiments/08_edge_of_stability.sh [more flags]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/run.sh"
common=(--seed 1 2 3 --layers 2 --dim 32 --heads 2 --ctx 32 --steps 300
        --warmup 0 --min-lr-ratio 1 --clip 0 --weight-decay 0 --eval-iters 4 --jobs 2)
gd=(--full-batch true --batch 32 --optimizer sgd --momentum 0 --lr 0.3 1 --sharpness-every 5 --sharpness-iters 20)
"$bin" "${common[@]}" "${gd[@]}" --norm none layernorm rmsnorm --out runs/exp8_eos/gd "$@"
# The untied head makes the stream writers exactly scale-invariant (lm/sharpness.h): one lr is enough.
"$bin" "${common[@]}" --full-batch true --batch 32 --optimizer sgd --momentum 0 --lr 0.3 --sharpness-every 5 \
  --sharpness-iters 20 --norm layernorm --tie-head false --out runs/exp8_eos/gd_untied "$@"
"$bin" "${common[@]}" --norm none layernorm rmsnorm --full-batch true --batch 32 --optimizer adamw --lr 3e-3 1e-2 \
  --sharpness-every 5 --sharpness-iters 10 --out runs/exp8_eos/adam "$@"
"$bin" "${common[@]}" --norm none layernorm rmsnorm --batch 16 --sharpness-batch 128 --optimizer sgd --momentum 0 \
  --lr 0.3 1 --sharpness-every 20 --batch-sharpness 16 --sharpness-iters 10 --out runs/exp8_eos/sgd_minibatch "$@"
/usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/08_eos_table.py" runs/exp8_eos
echo "Reports: runs/exp8_eos/{gd,gd_untied,adam,sgd_minibatch}/report.md (section 'Edge of stability', plots/sharpness.png); the anatomy: runs/exp8_eos/table.md"
