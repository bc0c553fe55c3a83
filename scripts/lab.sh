#!/usr/bin/env bash
# THE MAIN COMMAND: installs what is missing, builds, and runs the norm-stability lab's default
# sweep (every registered norm and no norm, 5 learning rates x 2 seeds on the embedded corpus,
# about a minute of training on 2 cores after the build), leaving report.md, runs.csv, curves.csv and plots in runs/lab.
#   bash scripts/lab.sh                       # default sweep
#   bash scripts/lab.sh --out runs/x --lr 1e-3 3e-3 --seed 1 2 3     # any compare_norms flags
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/install-deps.sh"
TAPEGRAD_TARGETS="compare_norms train_lm sample_lm eval_lm seed_walkthrough" \
  "$root/scripts/build.sh" -DTAPEGRAD_BUILD_EXAMPLES=ON
build="${TAPEGRAD_BUILD_DIR:-$root/build}"
cd "$root"
exec "$build/examples/compare_norms" "$@"
