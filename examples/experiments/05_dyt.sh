#!/usr/bin/env bash
# Experiment 5 — DyT: can a squashing function replace the norm?
#
# Question: does DyT (gamma tanh(alpha x) + beta, Zhu et al. 2025, "Transformers without
# Normalization") match LayerNorm and RMSNorm in final loss and in stability across learning
# rates, and how does that depend on its initial alpha?
#
# Literature: Zhu et al. report DyT matching LayerNorm/RMSNorm in ViTs, diffusion models and
# LLaMA-scale language models with alpha0 = 0.5 for most models — but for LLMs they tune alpha0
# (smaller for wider models, separately for attention and the rest), and note that training
# with DyT is sensitive to it. DyT normalises nothing: it only bounds, so a stream whose scale is
# far from ~1/alpha is either passed on almost linearly (scale unchanged) or saturated.
#
# Setup: Shakespeare, L4 H4 C64 T64 B8, 300 steps, AdamW, warmup 30, cosine to lr x 0.1, 3 seeds,
# lr 1e-3 ... 3e-2. (a) LayerNorm vs RMSNorm vs DyT (alpha0 0.5); (b) DyT with alpha0 0.5, 2, 8, 32
# (the residual stream starts at RMS ~0.03 under GPT-2's init, so alpha0 ~ 30 puts alpha x near 1).
#
# Measured: see the README's experiments table (filled in from runs/exp5_dyt/*/report.md).
#
#   bash examples/experiments/05_dyt.sh [more flags]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/run.sh"
need_shakespeare
common=(--data "$shakespeare" --layers 4 --dim 64 --heads 4 --steps 300 --lr 1e-3 3e-3 1e-2 3e-2 --seed 1 2 3)
"$bin" "${common[@]}" --norm layernorm rmsnorm dyt --out runs/exp5_dyt/norms "$@"
"$bin" "${common[@]}" --norm dyt --dyt-alpha 0.5 2 8 32 --out runs/exp5_dyt/alpha "$@"
echo "Reports: runs/exp5_dyt/norms/report.md (the norms) and runs/exp5_dyt/alpha/report.md (DyT's alpha0, as an axis)"
