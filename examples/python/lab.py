# The norm-stability lab from Python, notebook style: a sweep from a dict of axes, its records as a
# table, the curves, the report and plots compare_norms writes.
#   PYTHONPATH=build/python /usr/bin/python3 examples/python/lab.py [OUT]
import sys

import tapegrad as tg

out = sys.argv[1] if len(sys.argv) > 1 else "runs/python-lab"

# %% Three norms across three learning rates, one seed; short runs of the lab's small model.
result = tg.lab.sweep(
    out,
    axes={"norm": ["layernorm", "rmsnorm", "none"], "lr": [1e-3, 1e-2, 1e-1], "seed": [1]},
    steps=150, warmup=15,
    on_run=lambda r, skipped, done, total: print(f"[{done}/{total}] {r['run_id']}: val {r['final_val_loss']:.3f}"),
)

# %% The records: one dict per run (a pandas DataFrame with result.dataframe() when pandas is there).
print(f"\n{'norm':<10} {'lr':>7} {'val loss':>9} {'peak residual RMS':>18} {'diverged':>9}")
for r in result.records:
    print(f"{r['norm']:<10} {r['lr']:>7g} {r['final_val_loss']:>9.3f} {r['peak_residual_rms']:>18.2f} {str(bool(r['diverged'])):>9}")

# %% Scale drift at the reference learning rate, from the curves: the residual stream's RMS
# entering the last block, at the first step and the last.
curves = [c for c in result.curves() if c["lr"] == result.reference_lr]
last_block = max(int(k.rsplit("_", 1)[1]) for k in curves[0] if k.startswith("residual_rms_"))
print(f"\nresidual RMS entering block {last_block} at lr {result.reference_lr:g}:")
for norm in sorted({c["norm"] for c in curves}):
    rows = [c for c in curves if c["norm"] == norm]
    print(f"  {norm:<10} step 1: {rows[0][f'residual_rms_{last_block}']:.2f}   step {rows[-1]['step']}: "
          f"{rows[-1][f'residual_rms_{last_block}']:.2f}")

# %% The verdict and where the report and plots are.
print("\n" + result.summary)
print("report:", result.report_path, "|", result.plots_note or f"plots in {out}/plots")
