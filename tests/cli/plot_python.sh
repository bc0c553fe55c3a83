#!/usr/bin/env bash
# CTest "lab: compare_norms draws its plots with the first Python that has matplotlib": plot_lab.py
# is its own probe, so an interpreter without matplotlib (exit 3, silent) hands over to the next
# candidate, and one whose plotting fails is reported as failed, not skipped.
set -euo pipefail
bin="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*"; cat log; exit 1; }
py="$(command -v /usr/bin/python3 || command -v python3)"
"$py" -c "import matplotlib" 2>/dev/null || { echo "OK: plots (skipped: no Python with matplotlib here)"; exit 0; }
mkdir -p hidden/matplotlib
echo "raise ImportError('hidden by the test')" > hidden/matplotlib/__init__.py
printf '#!/bin/sh\nPYTHONPATH=%s exec %s "$@"\n' "$work/hidden" "$py" > no_matplotlib
printf '#!/bin/sh\nexit 1\n' > broken
chmod +x no_matplotlib broken
run() { "$bin/compare_norms" --norm layernorm --lr 1e-3 --seed 1 --layers 1 --heads 2 --dim 16 --ctx 16 --batch 2 \
          --steps 4 --evals 1 --eval-iters 1 --threads 1 --out D "$@" >out 2>log; }
run --python "$work/no_matplotlib"
grep -q "^plots: .*loss_vs_lr.png" out || fail "no plots after an interpreter without matplotlib: $(cat out)"
! grep -q "skipped\|failed" out || fail "the fallback's plots were reported as missing"
[[ -s D/plots/loss_vs_lr.png ]] || fail "loss_vs_lr.png not drawn"
rm -r D/plots
run --python "$work/broken"
grep -q "^plots failed (see the messages above)" out || fail "a failing plot script was not reported: $(cat out)"
echo "OK: plots"
