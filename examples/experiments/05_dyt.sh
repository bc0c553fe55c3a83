#!/usr/bin/env bash
# Experiment 5 — DyT on its paper's recipe, carried to small width faithfully, with one-factor
# ablations: can a squashing function replace the norm?
#
# Question: does DyT (gamma tanh(alpha x), Zhu et al. 2025, "Transformers without Normalization")
# trained as its paper trains language models match LayerNorm and RMSNorm in final loss and in
# stability across learning rates — and which part of the recipe decides it?
#
# Literature: Zhu et al. (Fig. 1, Table 4: LLaMA 7B-70B) report DyT matching RMSNorm with their LLM
# recipe (LLaMA appendix, official code): a learned scalar after the token embedding initialised to
# sqrt(d), alpha0 by width, no beta; section 7: alpha0 must be tuned by width. At d = 4096 the
# first DyT then sees inputs of 0.02 * 64 * 0.8 ~ 1 (the knee of tanh); the same formula at d = 64
# gives 0.16 (every DyT nearly linear). `--recipe dyt-paper` sets the literal values;
# `--recipe dyt-paper-transfer` what they do at the paper's width: the scale on token + position
# (LLaMA has no position table) at s0 = 1/(alpha0 x 0.02), an untied head (LLaMA 2's), AdamW beta2
# 0.95 and weight decay 0.1 as the official run (lm/recipes.h says which is which, and why).
#
# Setup: Shakespeare, L4 H4 C64 T64 B8, 2000 steps, warmup 100, cosine to lr x 0.1, the 7-rate
# grid 3e-4 ... 3e-1, 3 seeds. Every arm runs with an untied head, beta2 0.95 and weight decay 0.1,
# so that LayerNorm and RMSNorm are compared with DyT on the same optimiser and head:
#   matched/      LayerNorm, RMSNorm and DyT on the transfer (alpha0 1)
#   alpha/        DyT on the transfer, alpha0 0.5 and 2 (the paper's section 7 grid, with 1 above)
#   literal/      DyT on the literal recipe (scale on the tokens, s0 = sqrt(64) = 8, alpha0 1/1)
#   no_scale/     the transfer without the embedding scale   (the scale alone)
#   beta/         the transfer with DyT's beta               (beta alone)
#   tied/         the transfer with a tied head              (the tie alone)
# (alpha0 alone: alpha/). The table (05_dyt_table.py) gives each arm's loss per lr with its seed
# spread, its gap to LayerNorm at matched lr (paired over seeds) and best against best.
#
# Measured (189 runs, ~45 min on 2 cores, Zen 4): on the transfer DyT ends at 2.021 +- 0.011
# against LayerNorm 1.982 +- 0.032 and RMSNorm 1.979 +- 0.015 (all at lr 1e-2; paired over seeds
# DyT +0.039 +- 0.013 se): 0.04 above, beyond the seeds' spread — not reproduced on the recipe at
# this scale, by 2 % of the loss (the literal values gave 0.53 earlier, 0.26 here). One factor at a
# time: without the embedding scale 2.767 (the scale is what it needs: reproduced), with a tied
# head 2.116, with beta 2.005 +- 0.028 (within LayerNorm's spread), alpha0 0.5 / 2: 2.025 / 2.036.
#
#   bash examples/experiments/05_dyt.sh [more flags]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/run.sh"
need_shakespeare
out="${TAPEGRAD_EXP5_OUT:-runs/exp5_dyt}"
common=(--data "$shakespeare" --layers 4 --dim 64 --heads 4 --batch 8 --steps 2000 --warmup 100 --evals 8
        --lr 3e-4 1e-3 3e-3 1e-2 3e-2 1e-1 3e-1 --seed 1 2 3 --beta2 0.95 --weight-decay 0.1 --no-plots)
untied=(--tie-head false)
transfer=(--norm dyt --recipe dyt-paper-transfer)
"$bin" "${common[@]}" "${untied[@]}" --norm layernorm rmsnorm dyt --recipe dyt-paper-transfer --out "$out/matched" "$@"
"$bin" "${common[@]}" "${untied[@]}" "${transfer[@]}" --dyt-alpha 0.5 2 --out "$out/alpha" "$@"
"$bin" "${common[@]}" "${untied[@]}" --norm dyt --recipe dyt-paper --out "$out/literal" "$@"
"$bin" "${common[@]}" "${untied[@]}" "${transfer[@]}" --embed-scale none --out "$out/no_scale" "$@"
"$bin" "${common[@]}" "${untied[@]}" "${transfer[@]}" --dyt-beta true --out "$out/beta" "$@"
"$bin" "${common[@]}" "${transfer[@]}" --tie-head true --out "$out/tied" "$@"
/usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/05_dyt_table.py" "$out"
