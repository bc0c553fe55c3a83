#!/usr/bin/env bash
# CTest "lab: compare_norms draws its plots with the first Python that has matplotlib": plot_lab.py
# is its own probe, so an interpreter without matplotlib (exit 3, silent) hands over to the next
# candidate, and one whose plotting fails is reported as failed, not skipped — both when the
# interpreter is run after the sweep and when it was started in the sweep's last runs to wait for
# its arguments (--args-on-stdin: nothing sent, it exits quietly). plot_lab.py itself:
# a figure failing in either of its two drawing processes is named and fails the script, the others
# drawn; bad CSV files and flags are refused naming them; plots never write through links.
source "$(dirname "${BASH_SOURCE[0]}")/test_env.sh"
cd "$work"
py="$(command -v /usr/bin/python3 || command -v python3)"
"$py" -c "import matplotlib" 2>/dev/null || { echo "OK: plots (skipped: no Python with matplotlib here)"; exit 0; }
mkdir -p hidden/matplotlib
echo "raise ImportError('hidden by the test')" > hidden/matplotlib/__init__.py
printf '#!/bin/sh\nPYTHONPATH=%s exec %s "$@"\n' "$work/hidden" "$py" > no_matplotlib
printf '#!/bin/sh\nexit 1\n' > broken
chmod +x no_matplotlib broken
run() { "$bin_dir/compare_norms" --norm layernorm --lr 1e-3 --seed 1 --layers 1 --heads 2 --dim 16 --ctx 16 --batch 2 \
          --steps 4 --evals 1 --eval-iters 1 --threads 1 --out D "$@" >out 2>log; }
run --python "$work/no_matplotlib"
grep -q "^plots: .*loss_vs_lr.png" out || fail "no plots after an interpreter without matplotlib: $(cat out)"
! grep -q "skipped\|failed" out || fail "the fallback's plots were reported as missing"
[[ -s D/plots/loss_vs_lr.png ]] || fail "loss_vs_lr.png not drawn"
# A plot replaces what is at its path, never writes through a link planted there; a plots folder
# that is a link is refused.
echo victim > victim
ln -sf "$work/victim" D/plots/loss_vs_lr.png
"$py" "$bin_dir/plot_lab.py" D >log 2>&1 || fail "plot_lab.py failed over a planted link"
[[ $(cat victim) == victim ]] || fail "a plot was written through a link"
[[ -f D/plots/loss_vs_lr.png && ! -L D/plots/loss_vs_lr.png ]] || fail "the planted link was not replaced by the plot"
compgen -G "D/plots/*.tmp" >/dev/null && fail "temporary files were left behind"
mv D/plots D/real_plots
ln -s "$work/D/real_plots" D/plots
status=0
"$py" "$bin_dir/plot_lab.py" D >log 2>&1 || status=$?
[[ $status == 1 ]] && grep -q "D/plots is a link or not a directory" log || fail "a plots folder that is a link was accepted"
rm D/plots
rm -r D/real_plots
run --python "$work/broken"
grep -q "^plots failed (see the messages above)" out || fail "a failing plot script was not reported: $(cat out)"
# Two runs on two workers: the interpreter asked for is started when the first worker runs out of
# runs, once, and waits for its arguments; started without matplotlib or failing, the same as above.
printf '#!/bin/sh\necho "$*" >> %s/calls\nexec %s "$@"\n' "$work" "$py" > logged
chmod +x logged
rm -rf D
run --python "$work/logged" --lr 2e-3 --jobs 2
[[ $(wc -l < calls) == 1 ]] && grep -q -- "plot_lab.py --args-on-stdin$" calls || fail "the plotter was not started once, in the sweep: $(cat calls)"
grep -q "^plots: .*loss_vs_lr.png" out && ! grep -q "skipped\|failed" out || fail "the started plotter drew no plots: $(cat out)"
[[ $(find D/plots -name '*.png' -newer calls | wc -l) -ge 6 ]] || fail "the started plotter's plots are missing: $(ls D/plots)"
rm -rf D
run --python "$work/no_matplotlib" --lr 2e-3 --jobs 2
grep -q "^plots: .*loss_vs_lr.png" out && ! grep -q "skipped\|failed" out || fail "no plots after a started interpreter without matplotlib: $(cat out)"
rm -rf D
run --python "$work/broken" --lr 2e-3 --jobs 2
grep -q "^plots failed (see the messages above)" out || fail "a failing started plot script was not reported: $(cat out)"
# --args-on-stdin by hand: its input closed with nothing sent, or cut off inside an argument, it
# exits 0 with nothing drawn or printed; each argument ended by a NUL byte, any bytes in it.
run --lr 2e-3 --jobs 2 --no-plot
rm -rf D/plots
for input in '' 'D' '--reference-lr\0002e-'; do
  status=0
  printf -- "$input" | "$py" "$bin_dir/plot_lab.py" --args-on-stdin >log 2>&1 || status=$?
  [[ $status == 0 && ! -s log && ! -e D/plots ]] || fail "--args-on-stdin given '$input': status $status"
done
mv D "a b
c"
printf -- '--reference-lr\0002e-3\000--\000a b\nc\000' | "$py" "$bin_dir/plot_lab.py" --args-on-stdin >log 2>&1 || fail "--args-on-stdin with a folder of spaces and a newline"
[[ -s "a b
c/plots/loss_vs_lr.png" ]] || fail "--args-on-stdin drew nothing into its folder"
mv "a b
c" D
status=0
"$py" "$bin_dir/plot_lab.py" --args-on-stdin D >log 2>&1 || status=$?
[[ $status == 2 ]] && grep -q "args-on-stdin comes alone" log || fail "--args-on-stdin beside other arguments: status $status"
# A learning rate below six decimals reaches the script as itself (its per-step plots are drawn at it).
rm -rf D
run --lr 1e-7
grep -q "^plots: .*loss_curves.png" out && ! grep -q "skipped\|failed" out || fail "plots at lr 1e-7: $(cat out) $(cat log)"
rm -rf D
run
# A figure that fails is named and fails the script, whichever of the two drawing processes drew
# it, and the others are still drawn; a folder whose CSV files every figure needs are unusable is
# refused naming the file.
"$py" - D/curves.csv <<'EOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
keep = [i for i, h in enumerate(rows[0]) if not h.startswith("residual_rms_") and h != "grad_norm"]
csv.writer(open(sys.argv[1], "w", newline="")).writerows([[r[i] for i in keep] for r in rows])
EOF
rm -rf D/plots
status=0
"$py" "$bin_dir/plot_lab.py" D >log 2>&1 || status=$?
[[ $status == 1 ]] || fail "plot_lab.py with failing figures exited $status, not 1"
grep -q "residual_rms.png not drawn: the CSV files have no column 'residual_rms_0'" log || fail "residual_rms.png's failure is not named"
grep -q "grad_norm.png not drawn: the CSV files have no column 'grad_norm'" log || fail "grad_norm.png's failure is not named"
! grep -q "plots written\|Traceback" log || fail "plot_lab.py claimed its plots were written, or crashed"
for f in loss_vs_lr limits_vs_lr log_z loss_curves attention_logit; do [[ -s D/plots/$f.png ]] || fail "$f.png was not drawn"; done
mv D/runs.csv runs.csv
mkfifo D/runs.csv
status=0
timeout 20 "$py" "$bin_dir/plot_lab.py" D >log 2>&1 || status=$?
[[ $status == 1 ]] && grep -q "D/runs.csv is not a readable CSV file: D/runs.csv is not a regular file" log || fail "runs.csv as a FIFO: status $status: $(cat log)"
rm D/runs.csv
mv runs.csv D/runs.csv
cp D/sweep.json sweep.json
for grid in '{bad' '[1]' '{"train_text": 3}' '{"schema": {"runs": 5}}' '{"recipe_targets": {"x": 5}}'; do
  printf '%s' "$grid" > D/sweep.json
  status=0
  "$py" "$bin_dir/plot_lab.py" D >log 2>&1 || status=$?
  [[ $status == 1 ]] && grep -q "^plot_lab.py: D/sweep.json" log && ! grep -q Traceback log || fail "sweep.json $grid: $(cat log)"
done
cp sweep.json D/sweep.json
echo "run_id,norm,placement,lr,seed" > D/runs.csv
echo "a,layernorm,pre,-1,1" >> D/runs.csv
status=0
"$py" "$bin_dir/plot_lab.py" D >log 2>&1 || status=$?
[[ $status == 1 ]] && grep -q "D/runs.csv: run 'a' has lr '-1'; a learning rate is a positive number" log || fail "a negative lr was not refused: $(cat log)"
status=0
"$py" "$bin_dir/plot_lab.py" D --reference-lr 0 >log 2>&1 || status=$?
[[ $status == 2 ]] && grep -q "reference-lr must be a positive learning rate, got 0" log || fail "--reference-lr 0 was not refused"
# And a figure failing in the forked process alone (each figure sleeps, so each process takes one).
if [[ $(nproc) -ge 2 ]]; then
  "$py" - "$bin_dir/plot_lab.py" >log 2>&1 <<'EOF' || fail "a figure failing in the forked process did not fail draw()"
import importlib.util, os, sys, time
spec = importlib.util.spec_from_file_location("plot_lab", sys.argv[1])
plot_lab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plot_lab)
parent = os.getpid()
def fails_in_child():
    time.sleep(0.3)
    if os.getpid() != parent:
        raise RuntimeError("failed in the forked process")
status = plot_lab.draw([("a.png", 1, fails_in_child), ("b.png", 1, fails_in_child)])
sys.exit(0 if status == 1 and os.getpid() == parent else 1)
EOF
  grep -q "RuntimeError: failed in the forked process" log || fail "the forked process's traceback is missing"
fi
echo "OK: plots"
