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
# Measured (2026-11-30, embedded corpus, 2 cores; both sweeps 6 min 31 s; sharpness / threshold,
# mean over 3 seeds, from curves.csv):
# (a) SGD. Without a norm: progressive sharpening, then the edge — at lr 0.3 the ratio rose 0.43 →
#     0.85 by step 75 and hovered at 0.82-0.95 to step 300 (Cohen et al. 2021, confirmed); at lr 0.1
#     it was still rising (0.02 → 0.29) when the run ended; at lr 1 it sat at 1.2-2.0 without
#     diverging. With LayerNorm it sat above 2/η from step 50 on (1.0-1.7 at lr 0.1 and 0.3, up to
#     2.4 at lr 1) without diverging; 2 of 3 LayerNorm runs at lr 1 diverged at step 14-16, before
#     the first measurement. So here the threshold separated nothing: no run diverged after
#     crossing it. Best explanation: these are mini-batch steps (64 random sequences) and the
#     measured loss is one fixed batch, not the loss the steps descend; and LayerNorm makes the
#     weights before it scale-invariant — steps along a sharp direction grow their norm, which
#     lowers the curvature the next steps see (our explanation; not tested here).
# (b) AdamW. The preconditioned sharpness rose with training and with lr, ending at 0.25 / 0.58 /
#     0.74 of 38/η without a norm and 0.51 / 0.56 / 0.75 with LayerNorm (lr 1e-3 / 3e-3 / 1e-2); it
#     crossed 38/η only at step 25 (1.8 and 10.3 with LayerNorm: the second moments v̂ are still
#     tiny there, so P⁻¹ is large) and fell back; no run diverged. Within 300 steps it approached but
#     did not reach and hover at 38/η — Cohen et al. 2022 trained far longer; not confirmed here.
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
