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
# Measured: see docs/experiments.md (experiment 08) for the numbers of the last run.
#
#   bash examples/experiments/08_edge_of_stability.sh [more flags]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/run.sh"
common=(--norm none layernorm rmsnorm --seed 1 2 3 --layers 2 --dim 32 --heads 2 --ctx 32 --steps 300
        --warmup 0 --min-lr-ratio 1 --clip 0 --weight-decay 0 --eval-iters 4 --sharpness-iters 10 --jobs 2)
"$bin" "${common[@]}" --full-batch true --batch 32 --optimizer sgd --momentum 0 --lr 0.3 1 --sharpness-every 5 \
  --out runs/exp8_eos/gd "$@"
"$bin" "${common[@]}" --full-batch true --batch 32 --optimizer adamw --lr 3e-3 1e-2 --sharpness-every 5 \
  --out runs/exp8_eos/adam "$@"
"$bin" "${common[@]}" --batch 16 --sharpness-batch 32 --optimizer sgd --momentum 0 --lr 0.3 1 --sharpness-every 10 \
  --batch-sharpness 4 --out runs/exp8_eos/sgd_minibatch "$@"
echo "Reports: runs/exp8_eos/{gd,adam,sgd_minibatch}/report.md (section 'Edge of stability', plots/sharpness.png)"
