"""The experiments' tables: reading a sweep folder's runs.csv and the lab's rules for comparing losses.

A best loss carries its seed spread (mean ± std, n); a difference counts ("lower" / "higher") when it
exceeds twice its standard error (docs/lab.md) — for a paired gap std(d)/sqrt(n) over the seeds'
differences d, for best against best sqrt(s1^2/n1 + s2^2/n2). A rate where any seed diverged has no
mean. Used by 05_dyt_table.py and 11_precision_table.py.
"""
import csv
import json
import math
import os
import statistics
from collections import namedtuple

Run = namedtuple("Run", "loss diverged peak_residual peak_logit")


def number(cell):
    return float(cell) if cell not in ("", "nan", None) else math.nan


def runs_of(out, folder, norm, want):
    """(lr, seed) -> Run of the runs of `norm` in out/folder whose settings match `want`, or None."""
    path = os.path.join(out, folder, "runs.csv")
    if not os.path.exists(path):
        return None
    # A run's settings cell holds the axes where it differs from the folder's base (sweep.json).
    with open(os.path.join(out, folder, "sweep.json"), encoding="utf-8") as f:
        base = json.load(f)["train"]
    text = lambda v: f"{v:g}" if isinstance(v, float) else str(v).lower() if isinstance(v, bool) else str(v)
    picked = {}
    with open(path, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            settings = dict(kv.split("=", 1) for kv in (r.get("settings") or "").split(";") if "=" in kv)
            if r["norm"] != norm or any(settings.get(k, text(base.get(k))) != v for k, v in want.items()):
                continue
            loss = float(r["final_val_loss"]) if r["final_val_loss"] not in ("", "nan") else math.nan
            picked[(float(r["lr"]), int(r["seed"]))] = Run(loss, r["diverged"] == "1", number(r["peak_residual_rms"]),
                                                          number(r["peak_attention_logit"]))
    return picked


def mean_std(xs):
    return (statistics.fmean(xs), statistics.stdev(xs) if len(xs) > 1 else math.nan) if xs else (math.nan, math.nan)


def per_lr(runs):
    """lr -> (mean, std, n, diverged) of the final validation loss."""
    table = {}
    for lr in sorted({lr for lr, _ in runs}):
        cells = [runs[k] for k in runs if k[0] == lr]
        diverged = sum(c.diverged or not math.isfinite(c.loss) for c in cells)
        losses = [c.loss for c in cells if not c.diverged and math.isfinite(c.loss)]
        m, s = mean_std(losses) if diverged == 0 else (math.nan, math.nan)
        table[lr] = (m, s, len(losses), diverged)
    return table


def fmt(m, s, n=None):
    if not math.isfinite(m):
        return "—"
    spread = f" ± {s:.3f}" if math.isfinite(s) else ""
    return f"{m:.3f}{spread}" + (f" (n={n})" if n is not None else "")


def verdict(diff, se):
    if not (math.isfinite(diff) and math.isfinite(se)):
        return "n/a"
    if abs(diff) <= 2 * se:
        return "within the spread"
    return "higher" if diff > 0 else "lower"




def write_table(out, lines):
    """Prints the table's lines as Markdown and writes them to out/table.md."""
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(out, "table.md"), "w", encoding="utf-8") as f:
        f.write(text)
