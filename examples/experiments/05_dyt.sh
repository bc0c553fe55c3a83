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
# Measured (2026-12-01, 2 cores, 84 runs, 657 s): LayerNorm and RMSNorm the same within seed
# noise (best val 2.438 vs 2.447 at lr 1e-2; both trained up to 3e-2; LR sensitivity 0.100 vs
# 0.086; step time 1.00x, 95 % interval 0.91-1.10: no measurable difference). DyT at the paper's
# alpha0 = 0.5 never trained at any lr: 3.352 = the unigram level (token frequencies alone), no
# run diverged. Nor did alpha0 = 2 or 8. alpha0 = 32 trained at lr 1e-3 only (2.855, against
# LayerNorm's 2.513 at that lr) and stalled above. Refuted here: DyT does not match LayerNorm in
# this setup. Mechanism, from curves.csv: under GPT-2's init the embeddings have RMS 0.028, and
# DyT does not rescale — at alpha0 = 0.5 the first block reads RMS 0.014 where LayerNorm hands it
# 1.0, and the step-1 gradient norm is 0.064 against 3.85. The last blocks then grow the stream
# (RMS 40-60 entering block 3 by step 60 at lr 3e-3; 700 at 3e-2), the final DyT saturates
# (alpha x >> 1, so 1 - tanh^2 -> 0 and nothing below it learns), and the head's logits stay
# <= 3.4: the unigram solution. alpha0 = 32 makes alpha x ~ 1 at init, enough at the smallest lr.
# Zhu et al. train LLMs with tuned alpha0 and far longer; a DyT model likely needs its input
# scale matched (embedding scale or alpha0), which the LayerNorm model gets for free.
#
#   bash examples/experiments/05_dyt.sh [more flags]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/run.sh"
need_shakespeare
common=(--data "$shakespeare" --layers 4 --dim 64 --heads 4 --steps 300 --lr 1e-3 3e-3 1e-2 3e-2 --seed 1 2 3)
"$bin" "${common[@]}" --norm layernorm rmsnorm dyt --out runs/exp5_dyt/norms "$@"
"$bin" "${common[@]}" --norm dyt --dyt-alpha 0.5 2 8 32 --out runs/exp5_dyt/alpha "$@"
echo "Reports: runs/exp5_dyt/norms/report.md (the norms) and runs/exp5_dyt/alpha/report.md (DyT's alpha0, as an axis)"
