"""Experiment 06's loss table with the seeds' spread: Peri-LN against pre- and post-norm.

  /usr/bin/python3 examples/experiments/06_table.py runs/exp6_placements

Per depth (L8, L12) and placement: the final validation loss per lr (mean ± std over seeds), the
best, and Peri-LN's gap to each other placement best against best and paired (same lr and seed)
at Peri-LN's best lr, "lower"/"higher" only beyond twice the standard error (docs/lab.md).
Writes runs/exp6_placements/table.md.
"""
import csv
import math
import os
import sys

from exp_table import Run, fmt, mean_std, number, per_lr, verdict, write_table

PLACEMENTS = ["pre", "post", "peri"]


def placement_runs(out, folder, placement):
    """(lr, seed) -> Run of the LayerNorm runs with this placement in out/folder, or None."""
    path = os.path.join(out, folder, "runs.csv")
    if not os.path.exists(path):
        return None
    picked = {}
    with open(path, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r["norm"] == "layernorm" and r["placement"] == placement:
                picked[(float(r["lr"]), int(r["seed"]))] = Run(number(r["final_val_loss"]), r["diverged"] == "1",
                                                              number(r["peak_residual_rms"]),
                                                              number(r["peak_attention_logit"]))
    return picked or None


def main(out):
    lines = ["| depth | placement | val loss per lr (mean ± std, n) | best | Peri-LN − this, best vs best | "
             "paired at Peri-LN's best lr |", "|---|---|---|---|---|---|"]
    for depth in ("L8", "L12"):
        runs = {p: placement_runs(out, depth, p) for p in PLACEMENTS}
        if not all(runs.values()):
            continue
        tables = {p: per_lr(r) for p, r in runs.items()}
        bests = {p: min((lr for lr in t if math.isfinite(t[lr][0])), key=lambda lr: t[lr][0]) for p, t in tables.items()}
        bp = bests["peri"]
        for p in PLACEMENTS:
            t = tables[p]
            cells = ", ".join(f"{lr:g}: {fmt(*t[lr][:3])}" for lr in sorted(t))
            compare = paired = "—"
            if p != "peri":
                (m1, s1, n1, _), (m0, s0, n0, _) = tables["peri"][bp], t[bests[p]]
                se = math.sqrt(s1 ** 2 / n1 + s0 ** 2 / n0)
                compare = f"{m1 - m0:+.3f} (2 se {2 * se:.3f}): {verdict(m1 - m0, se)}"
                d = [runs["peri"][(bp, s)].loss - runs[p][(bp, s)].loss for (lr, s) in runs["peri"] if lr == bp
                     and (bp, s) in runs[p] and math.isfinite(runs[p][(bp, s)].loss)]
                if len(d) > 1:
                    m, sd = mean_std(d)
                    paired = f"{m:+.3f} ± {sd / math.sqrt(len(d)):.3f} se (n={len(d)}): {verdict(m, sd / math.sqrt(len(d)))}"
            lines.append(f"| {depth} | {p} | {cells} | {fmt(*t[bests[p]][:3])} at {bests[p]:g} | {compare} | {paired} |")
    write_table(out, lines)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "runs/exp6_placements")
