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
# Setup: embedded corpus, L2 H2 C32 T32, batch 64, 300 steps, constant lr (no warmup, no decay),
# no clipping, no weight decay; sharpness every 25 steps on one fixed batch of 64 sequences
# (float64, at most 12 Lanczos steps: lm/tapegrad/lm/sharpness.h); LayerNorm vs no norm; 3 seeds.
#   (a) SGD without momentum at lr 0.1, 0.3, 1: sharpness against 2/η
#   (b) AdamW (β₁ 0.9) at lr 1e-3, 3e-3, 1e-2: preconditioned sharpness against 38/η
# (Mini-batch SGD, not full-batch GD: the training batches are random, the measured batch fixed.)
#
# Measured: see the header's last lines, written after running it (README, experiments table).
#
#   bash examples/experiments/08_edge_of_stability.sh [--data ../shared/data/tinyshakespeare.txt]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/run.sh"
common=(--norm layernorm none --seed 1 2 3 --layers 2 --dim 32 --heads 2 --ctx 32 --batch 64 --steps 300
        --warmup 0 --min-lr-ratio 1 --clip 0 --weight-decay 0 --eval-iters 4
        --sharpness-every 25 --sharpness-iters 12)
"$bin" "${common[@]}" --optimizer sgd --momentum 0 --lr 0.1 0.3 1 --out runs/exp8_eos/sgd "$@"
"$bin" "${common[@]}" --optimizer adamw --lr 1e-3 3e-3 1e-2 --out runs/exp8_eos/adamw "$@"
echo "Reports: runs/exp8_eos/sgd/report.md and runs/exp8_eos/adamw/report.md (section 'Edge of stability')"
