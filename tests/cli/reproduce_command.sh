#!/usr/bin/env bash
# CTest "lab: the report's reproduce command, pasted, names the same grid": a sweep with settings of
# every kind away from the lab's defaults (a bool flag both ways, numbers, a path with a space, an
# axis of two values); its report's command is run as printed and must find every run done
# (nothing trained, no setting refused).
source "$(dirname "${BASH_SOURCE[0]}")/test_env.sh"
cd "$work"
for i in $(seq 200); do echo "line $i of a small text, with some words to learn."; done > "my text.txt"
common=(--lr 1e-3 3e-3 --seed 1 --layers 1 --heads 2 --dim 16 --ctx 16 --batch 2 --steps 4 --evals 1 --eval-iters 2
        --z-loss 1e-4 --data "my text.txt" --threads 1 --no-plot)
"$bin_dir/compare_norms" --norm rmsnorm "${common[@]}" --eval-train --out "A dir" >log 2>&1 || fail "first sweep"
"$bin_dir/compare_norms" --norm rmsnorm --bias false "${common[@]}" --no-eval-train --out B >log 2>&1 || fail "second sweep"
for d in "A dir" B; do
  cmd="$(sed -n 's/^Reproduce the whole grid: `\(.*\)`$/\1/p' "$d/report.md")"
  [[ "$cmd" == compare_norms\ * ]] || fail "$d: no reproduce command in report.md"
  echo "$d: $cmd"
  # As a user pastes it (the binary's folder in place of PATH), with this test's bookkeeping flags.
  bash -c "\"$bin_dir/\"$cmd --threads 1 --no-plot" >log 2>&1 || fail "$d: the pasted command failed"
  grep -q "no run trained (each was in the folder already)" log || fail "$d: the pasted command trained again"
done
grep -q -- "--eval-train" <<<"$(sed -n 's/^Reproduce the whole grid: //p' "A dir/report.md")" || fail "A: --eval-train not in the command"
grep -q -- "--bias false" <<<"$(sed -n 's/^Reproduce the whole grid: //p' B/report.md)" || fail "B: --bias false not in the command"
echo "OK: reproduce commands paste"
