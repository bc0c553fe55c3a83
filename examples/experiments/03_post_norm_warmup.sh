#!/usr/bin/env bash
# Experiment 3 — post-norm needs warmup, pre-norm does not (Xiong et al. 2020, "On Layer
# Normalization in the Transformer Architecture").
#
# Question: with LayerNorm, how do post-norm (X1 = Norm(X + Attn(X))) and pre-norm
# (X1 = X + Attn(Norm(X))) respond to removing the learning-rate warmup?
#
# Expected: Xiong et al. show that post-norm's gradients near the output are large at
# initialisation, so without warmup it trains worse or diverges at learning rates that pre-norm
# handles; with warmup the gap closes. Pre-norm should barely care about warmup.
#
# Measured (2026-11-30, embedded corpus, 2-core machine of bench/RESULTS.md): 24 runs, 412 s, 6 layers. Without warmup
# post-norm failed everywhere: at lr 1e-3 one of two seeds diverged (the other reached 1.35), and
# at 3e-3 and 1e-2 it stalled at a loss of 3.43 (about the character-frequency level) or
# diverged; pre-norm without warmup trained (1.10 at 1e-3). With 100 warmup steps post-norm
# trained at 1e-3 (1.20) but still stalled at higher rates; pre-norm improved to 0.72 (3e-3).
# Confirmed: post-norm needs warmup (and a small lr) where pre-norm does not — though at this
# small scale and 500 steps, warmup helps pre-norm too.
#
#   bash examples/experiments/03_post_norm_warmup.sh [--data ../shared/data/tinyshakespeare.txt] [more flags]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/run.sh"
exec "$bin" --dim 128 --norm layernorm --placement pre post --warmup 0 100 --lr 1e-3 3e-3 1e-2 --seed 1 2 --steps 500 \
  --layers 6 --out runs/exp3_post_norm_warmup "$@"
