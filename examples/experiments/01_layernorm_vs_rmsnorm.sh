#!/usr/bin/env bash
# Experiment 1 — LayerNorm vs RMSNorm: parity of loss, and the speed difference.
#
# Question: does dropping LayerNorm's re-centring (RMSNorm) cost anything in loss at this scale,
# and what does it buy in speed? Both pre-norm, three seeds, the two learning rates where both
# train well; runs one at a time (--jobs 1) so step times are not disturbed by a parallel run.
#
# Expected (Zhang & Sennrich 2019; LLaMA's choice): final validation losses equal within seed
# noise; RMSNorm's step slightly faster (one reduction per row instead of two), by a few percent
# at most, because norms are a small part of a step dominated by matrix products (bench/ has the
# isolated kernel figures).
#
# Measured (2026-11-30, embedded corpus, 2-core machine of bench/RESULTS.md): 12 runs, 500 steps, one at a time. Final
# validation loss 0.694 (LayerNorm) vs 0.693 (RMSNorm) at lr 3e-3, over 3 seeds: the same within
# noise (std ~0.01). Whole-step time 32.4 vs 32.7 ms: no measurable difference — the norms are
# ~3 % of a step here. The kernel-level difference is in bench/RESULTS.md.
#
#   bash examples/experiments/01_layernorm_vs_rmsnorm.sh [--data ../shared/data/tinyshakespeare.txt] [more flags]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/run.sh"
exec "$bin" --dim 128 --norm layernorm rmsnorm --lr 1e-3 3e-3 --seed 1 2 3 --steps 500 --jobs 1 --out runs/exp1_ln_vs_rms "$@"
