#!/usr/bin/env bash
# CTest "lab: every experiment's analysis script reads the sweeps its experiment writes": the
# Python scripts beside examples/experiments/*.sh read runs.csv columns, curves.csv, checkpoints
# and `import tapegrad` — formats and an API that move under them — and the experiments take
# minutes to hours, so nothing else would run them between releases. Each script here reads tiny
# sweeps of its experiment's shape (the same folders, norms and settings; 3 steps, width 16) and
# must print its table with the rows it promises; 11_norm_drift.py must hook every norm of a model
# (with hooks off in evaluation, a script that forgot to ask for them saw no call and crashed).
source "$(dirname "${BASH_SOURCE[0]}")/test_env.sh"
experiments="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../examples/experiments" && pwd)"
py=/usr/bin/python3
cd "$work"
tiny=(--layers 1 --heads 2 --dim 16 --ctx 16 --batch 2 --steps 3 --warmup 0 --evals 1 --eval-iters 1 --threads 1
      --no-plots --lr 1e-3 1e-2 --seed 1 2)
sweep() { "$bin_dir/compare_norms" "${tiny[@]}" "$@" >>log 2>&1 || fail "compare_norms $*"; }
table() {  # table SCRIPT FOLDER: the script's table, or fail with its output
  "$py" "$experiments/$1" "$2" >table.md 2>&1 || { cat table.md >>log; fail "$1 $2 failed"; }
}
has() { grep -qF -- "$1" table.md || { cat table.md >>log; fail "$2: no row '$1'"; }; }

# 05: matched, alpha, literal, no_scale, beta, tied arms; the table needs LayerNorm and reads every arm.
sweep --norm layernorm rmsnorm dyt --recipe dyt-paper-transfer --out e05/matched
sweep --norm dyt --recipe dyt-paper-transfer --dyt-alpha 0.5 2 --out e05/alpha
table 05_dyt_table.py e05
has "| LayerNorm |" 05_dyt_table.py
has "| DyT, transfer, alpha0 2 |" 05_dyt_table.py

# 06: LayerNorm in three placements at one depth.
sweep --norm layernorm --placement pre post peri --out e06/L8
table 06_table.py e06
has "| L8 | peri |" 06_table.py

# 10: z-loss 0 and 1e-4 in a weight-decay folder.
sweep --norm layernorm --z-loss 0 1e-4 --out e10/wd0
table 10_table.py e10
has "| weight decay 0 | 1e-4 |" 10_table.py

# 11: float32, bf16 with the norms in both precisions, and eps 1e-6.
sweep --norm layernorm rmsnorm dyt none --precision fp32 --out e11/fp32
sweep --norm layernorm rmsnorm dyt none --precision bf16 --norm-precision fp32 bf16 --out e11/bf16
sweep --norm layernorm rmsnorm --precision bf16 --norm-precision bf16 --norm-eps 1e-6 --out e11/eps
table 11_precision_table.py e11
has "| LayerNorm | bf16 GEMMs, norms bf16 |" 11_precision_table.py
has "| RMSNorm | bf16 GEMMs, norms bf16, eps 1e-6 |" 11_precision_table.py
has "| no norm | bf16 GEMMs, norms fp32 |" 11_precision_table.py

# 11's drift: every norm of a bf16-trained model hooked; bf16 rounds by at most 2^-9 relative, twice.
# It imports tapegrad: the sanitizer build has no Python front-end (its second argument says so).
if [[ ${2:-ON} == ON ]]; then
"$bin_dir/train_lm" --layers 2 --heads 2 --dim 16 --ctx 16 --batch 2 --steps 3 --warmup 0 --eval-every 0 --threads 1 \
  --precision bf16 --norm layernorm --out ck >>log 2>&1 || fail "train_lm for the drift"
PYTHONPATH="$bin_dir/../python" "$py" "$experiments/11_norm_drift.py" ck --per-layer >table.md 2>&1 \
  || { cat table.md >>log; fail "11_norm_drift.py failed"; }
for layer in blocks.0.norm1 blocks.0.norm2 blocks.1.norm1 blocks.1.norm2 norm_f; do has "| $layer |" 11_norm_drift.py; done
"$py" - table.md <<'EOF' || fail "11_norm_drift.py: a drift outside (0, 2^-8]: $(cat table.md)"
import sys
rows = [l.split("|") for l in open(sys.argv[1]) if l.startswith("| ck |")]
drifts = [float(r[4]) for r in rows]
sys.exit(0 if len(drifts) == 5 and all(0 < d <= 2 ** -8 for d in drifts) else 1)
EOF
fi

# 08: the edge-of-stability folders, the sharpness measured past the table's window (step 100).
eos=(--seed 1 --layers 1 --heads 2 --dim 16 --ctx 16 --steps 104 --warmup 0 --min-lr-ratio 1 --clip 0 --weight-decay 0
     --eval-iters 1 --threads 1 --no-plots --norm layernorm --sharpness-every 4 --sharpness-iters 3)
full=(--full-batch true --batch 4)
sgd=(--optimizer sgd --momentum 0 --lr 0.3)
run08() { "$bin_dir/compare_norms" "${eos[@]}" "$@" >>log 2>&1 || fail "compare_norms $*"; }
run08 "${full[@]}" "${sgd[@]}" --out e08/gd
run08 "${full[@]}" "${sgd[@]}" --tie-head false --out e08/gd_untied
run08 "${full[@]}" --optimizer adamw --lr 3e-3 --out e08/adam
run08 --batch 4 --sharpness-batch 8 --batch-sharpness 4 "${sgd[@]}" --out e08/sgd_minibatch
table 08_eos_table.py e08
[[ $(grep -cE '^\| layernorm \| 0\.3 \| [0-9]' table.md) -ge 2 ]] || { cat table.md >>log; fail "08_eos_table.py: no measured lambda_1 for gd"; }
grep -qE '^\| layernorm \| 0\.003 \| [0-9]' table.md || { cat table.md >>log; fail "08_eos_table.py: no measured lambda_1 for adam"; }
grep -q "batch sharpness" table.md || { cat table.md >>log; fail "08_eos_table.py: no mini-batch table"; }
echo "OK: every experiment's analysis script reads its sweeps$([[ ${2:-ON} == ON ]] || echo " (11_norm_drift.py not run: no Python front-end in this build)")"
