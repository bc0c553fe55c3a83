#!/usr/bin/env bash
# CTest "cli: hostile names never reach a shell": compare_norms starts Python for its plots. With a
# sweep folder named like a command and a --python value that is one, no command may run: the
# plot still works for the folder (its name is one argument), and the bogus interpreter is just a
# program that does not exist, so the plots fall back to the real one.
set -euo pipefail
bin_dir="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
tiny=(--norm none --lr 1e-3 --seed 1 --steps 4 --eval-iters 1 --layers 1 --heads 2 --dim 16 --ctx 16 --batch 2
      --jobs 1)
out='o;touch pwned1;$(touch pwned2)`touch pwned3`'\''"'
# An interpreter named as a shell command is refused as a program that is not there, never run.
if "$bin_dir/compare_norms" "${tiny[@]}" --out py_out --python 'touch pwned4; false' > log.txt 2>&1; then
  cat log.txt; echo "FAIL: --python 'touch pwned4; false' was accepted"; exit 1
fi
grep -qF -- "--python 'touch pwned4; false': not found on PATH" log.txt ||
  { cat log.txt; echo "FAIL: the hostile --python is not named"; exit 1; }
"$bin_dir/compare_norms" "${tiny[@]}" --out "$out" > log.txt 2>&1 ||
  { cat log.txt; echo "FAIL: compare_norms failed"; exit 1; }
for f in pwned1 pwned2 pwned3 pwned4; do
  [[ ! -e "$f" ]] || { echo "FAIL: a shell ran a command from a name ($f was created)"; exit 1; }
done
[[ -f "$out/report.md" ]] || { echo "FAIL: no report in the hostile-named folder"; exit 1; }
[[ -f "$out/plots/loss_vs_lr.png" ]] || { cat log.txt; echo "FAIL: no plots in the hostile-named folder"; exit 1; }
# A folder name starting with '-' is a folder, not a flag of the plotting script.
"$bin_dir/compare_norms" "${tiny[@]}" --out "-dash" > log.txt 2>&1 || { cat log.txt; echo "FAIL: --out -dash"; exit 1; }
[[ -f "-dash/plots/loss_vs_lr.png" ]] || { cat log.txt; echo "FAIL: no plots for a folder named -dash"; exit 1; }
echo "OK: hostile names stayed names"
