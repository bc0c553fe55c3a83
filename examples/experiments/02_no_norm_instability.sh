#!/usr/bin/env bash
# Experiment 2 — no norm: divergence and scale drift where pre-norm models train.
#
# Question: what happens to a pre-norm decoder when its norms are removed (identity), at learning
# rates where LayerNorm/RMSNorm train, at depth 4 and 8?
#
# Expected: without a norm the residual stream's RMS and the attention logits grow far beyond the
# normalised models' (the sub-layers read the raw, drifting stream), runs diverge at learning
# rates where pre-norm models still train, deeper models diverge earlier, and the LR sensitivity
# (Wortsman et al. 2023) is several times higher.
#
# Measured (2026-11-30, embedded corpus, 2-core machine of bench/RESULTS.md): 48 runs, 435 s. Without a norm 4 of 8
# runs diverged at 4 layers and 6 of 8 at 8 layers (every lr >= 1e-2, and 3e-3 too at depth 8),
# all by loss explosion led by an attention logit; LayerNorm and RMSNorm: 0 of 32. Largest stable
# lr: 3e-3 (L4) and 1e-3 (L8) without a norm vs 3e-2 with either norm. LR sensitivity 1.48 (L4)
# and 1.96 (L8) vs 0.67 / 0.71 for LayerNorm. At lr 1e-3 the residual stream's RMS peaked at 7.6
# (L4) / 8.7 (L8) without a norm vs 0.6 / 1.0 with one, and the largest attention logit at 580
# vs 17 (L4). Expectation confirmed, more strongly with depth.
#
#   bash examples/experiments/02_no_norm_instability.sh [--data ../shared/data/tinyshakespeare.txt] [more flags]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/run.sh"
exec "$bin" --dim 128 --norm layernorm rmsnorm none --lr 1e-3 3e-3 1e-2 3e-2 --seed 1 2 --layers 4 8 --out runs/exp2_no_norm "$@"
