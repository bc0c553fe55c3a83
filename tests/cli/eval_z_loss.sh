#!/usr/bin/env bash
# CTest "cli: eval_lm's loss and perplexity are the cross-entropy; the z-loss is printed apart":
# a model trained with --z-loss 0.01 is evaluated on a text of exactly one window (ctx + 1
# characters), so the whole-file loss eval_lm prints is the loss of the --dump-grads batch of one
# window. That batch's metadata holds the cross-entropy ("loss"), the penalty ("z_loss") and the
# objective; the golden test checks "loss" against PyTorch's F.cross_entropy on the same weights.
set -euo pipefail
bin_dir="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py=/usr/bin/python3
[[ -x "$py" ]] || py=python3
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$bin_dir/train_lm" --data "$here/../fixtures/text.txt" --layers 1 --heads 2 --dim 16 --ctx 16 --batch 2 --steps 5 \
  --warmup 1 --eval-every 0 --threads 1 --z-loss 0.01 --out "$work/run" 2> "$work/train.log" || { tail -3 "$work/train.log"; fail "train_lm"; }
head -c 17 "$here/../fixtures/text.txt" > "$work/window.txt"  # 17 ASCII characters: ctx + 1 tokens
"$bin_dir/eval_lm" --checkpoint "$work/run" --data "$work/window.txt" --dump-grads "$work/g.safetensors" --batch 1 \
  > "$work/eval.txt" || fail "eval_lm"
"$py" - "$work/eval.txt" "$work/g.safetensors" <<'PY'
import json, math, re, struct, sys
out = open(sys.argv[1]).read()
raw = open(sys.argv[2], "rb").read()
meta = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])["__metadata__"]
ce, z, objective = float(meta["loss"]), float(meta["z_loss"]), float(meta["objective"])
m = re.search(r"^loss (\S+)  perplexity (\S+)", out, re.M)
zl = re.search(r"^z-loss (\S+) \(coefficient 0\.01, not part of the loss\)  mean log Z (\S+)", out, re.M)
if not m or not zl:
    sys.exit(f"FAIL: unexpected eval_lm output:\n{out}")
loss, ppl, penalty = float(m.group(1)), float(m.group(2)), float(zl.group(1))
checks = [
    (abs(loss - ce) <= 5e-5, f"printed loss {loss} is not the cross-entropy {ce}"),
    (abs(ppl - math.exp(ce)) <= 5e-4 * math.exp(ce), f"perplexity {ppl} is not exp(cross-entropy) = {math.exp(ce)}"),
    (z > 1e-4 and abs(penalty - z) <= 5e-6, f"printed z-loss {penalty} vs the batch's {z}"),
    (abs(objective - (ce + z)) <= 1e-6 * objective, f"objective {objective} != loss {ce} + z-loss {z}"),
    (abs(loss - objective) > 1e-4, f"the loss {loss} equals the objective {objective}: the penalty is in it"),
]
for ok, why in checks:
    if not ok:
        sys.exit("FAIL: " + why)
print(f"OK: loss {loss} (cross-entropy {ce:.6f}), perplexity {ppl}, z-loss {z:.6f} apart, objective {objective:.6f}")
PY
