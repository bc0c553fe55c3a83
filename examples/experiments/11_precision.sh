#!/usr/bin/env bash
# Experiment 11: mixed precision x norm. The same pre-norm decoder (L4 H4 C64 T64 B8,
# tinyshakespeare, AdamW with beta2 0.95 and decay 0.1, untied head) with LayerNorm, RMSNorm, DyT
# (on dyt-paper-transfer, experiment 05) and no norm, trained three ways: float32; bf16 GEMMs with
# the norms in float32 (what torch.autocast, LLaMA and T5 do); bf16 GEMMs with the norms in bf16 too
# (--norm-precision bf16: each norm's input and output rounded). Then LayerNorm and RMSNorm in bf16
# with eps 1e-6 beside the default 1e-5. Seven rates (Wortsman et al.'s grid), three seeds, 1,000
# steps. 11_precision_table.py turns the folders into the table of docs/experiments.md, and
# 11_norm_drift.py measures how far each norm computed in bf16 lands from its float32 twin.
#
#   examples/experiments/11_precision.sh          # ~25 min on 2 cores
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/run.sh"
need_shakespeare
out="${TAPEGRAD_EXP11_OUT:-runs/exp11_precision}"
common=(--data "$shakespeare" --layers 4 --dim 64 --heads 4 --batch 8 --steps 1000 --warmup 100 --evals 5
        --lr 3e-4 1e-3 3e-3 1e-2 3e-2 1e-1 3e-1 --seed 1 2 3 --beta2 0.95 --weight-decay 0.1 --tie-head false
        --recipe dyt-paper-transfer --no-plots)
norms=(--norm layernorm rmsnorm dyt none)
"$bin" "${common[@]}" "${norms[@]}" --precision fp32 --out "$out/fp32" "$@"
"$bin" "${common[@]}" "${norms[@]}" --precision bf16 --norm-precision fp32 bf16 --out "$out/bf16" "$@"
"$bin" "${common[@]}" --norm layernorm rmsnorm --precision bf16 --norm-precision bf16 --norm-eps 1e-6 --out "$out/eps" "$@"
/usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/11_precision_table.py" "$out"
# The drift of each norm computed in bf16 from its float32 twin, on models trained in bf16 at the
# best rate (1e-2) and a high one (1e-1).
drift=()
for norm in layernorm rmsnorm dyt; do
  recipe=(); [[ $norm == dyt ]] && recipe=(--recipe dyt-paper-transfer)
  for lr in 1e-2 1e-1; do
    "${bin%/*}/train_lm" --data "$shakespeare" --layers 4 --dim 64 --heads 4 --batch 8 --steps 1000 --warmup 100 \
      --beta2 0.95 --weight-decay 0.1 --no-tie-head --precision bf16 --eval-every 0 --norm "$norm" "${recipe[@]}" \
      --lr "$lr" --out "$out/drift/${norm}_lr$lr" > /dev/null
    drift+=("$out/drift/${norm}_lr$lr")
  done
done
PYTHONPATH="${TAPEGRAD_BUILD_DIR:-$root/build}/python" /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/11_norm_drift.py" "${drift[@]}"
