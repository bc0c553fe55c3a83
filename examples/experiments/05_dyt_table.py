#!/usr/bin/env python3
"""Experiment 05's table: every arm's final validation loss per learning rate with its seed spread,
its gap to LayerNorm at the same rate (paired over seeds: the same seed is the same initialisation
and batches) and best against best. Reads the runs.csv of each arm folder 05_dyt.sh wrote.

    05_dyt_table.py runs/exp5_dyt          # prints Markdown, and writes runs/exp5_dyt/table.md

The rule for "lower" / "higher" (docs/lab.md): a difference counts when it exceeds twice its
standard error — for a paired gap std(d)/sqrt(n) over the seeds' differences d, for best against
best sqrt(s1^2/n1 + s2^2/n2). A rate where any seed diverged has no mean (its count is shown).
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exp_table import fmt, mean_std, per_lr, runs_of, verdict, write_table  # noqa: E402

ARMS = [  # (label, folder, norm, settings that pick the runs)
    ("LayerNorm", "matched", "layernorm", {}),
    ("RMSNorm", "matched", "rmsnorm", {}),
    ("DyT, transfer (alpha0 1)", "matched", "dyt", {}),
    ("DyT, transfer, alpha0 0.5", "alpha", "dyt", {"dyt-alpha": "0.5"}),
    ("DyT, transfer, alpha0 2", "alpha", "dyt", {"dyt-alpha": "2"}),
    ("DyT, literal recipe (s0 = sqrt(d) on tokens)", "literal", "dyt", {}),
    ("DyT, transfer without the embedding scale", "no_scale", "dyt", {}),
    ("DyT, transfer with beta", "beta", "dyt", {}),
    ("DyT, transfer with a tied head", "tied", "dyt", {}),
]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "runs/exp5_dyt"
    arms = [(label, runs_of(out, folder, norm, want)) for label, folder, norm, want in ARMS]
    arms = [(label, runs) for label, runs in arms if runs]
    if not arms or arms[0][0] != "LayerNorm":
        sys.exit(f"05_dyt_table.py: no LayerNorm runs in {out}/matched/runs.csv (run 05_dyt.sh first)")
    ln = arms[0][1]
    lrs = sorted({lr for _, runs in arms for lr, _ in runs})
    lines = ["Final validation loss, mean ± std over seeds (— : a seed diverged or did not run; diverged runs in brackets)", "",
             "| arm | " + " | ".join(f"lr {lr:g}" for lr in lrs) + " |", "|---|" + "---|" * len(lrs)]
    tables = {label: per_lr(runs) for label, runs in arms}
    for label, _ in arms:
        cells = []
        for lr in lrs:
            m, s, n, d = tables[label].get(lr, (math.nan, math.nan, 0, 0))
            cells.append(fmt(m, s) + (f" [{d} div]" if d else ""))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "Gap to LayerNorm: at LayerNorm's best lr (paired over seeds), at the arm's own best lr, and best against best",
              "", "| arm | best lr | best loss | gap at LayerNorm's best lr (paired) | best vs LayerNorm's best | reading |",
              "|---|---|---|---|---|---|"]
    ln_best_lr = min((lr for lr in tables["LayerNorm"] if math.isfinite(tables["LayerNorm"][lr][0])),
                     key=lambda lr: tables["LayerNorm"][lr][0])
    lm, ls, ln_n, _ = tables["LayerNorm"][ln_best_lr]
    for label, runs in arms:
        t = tables[label]
        finite = [lr for lr in t if math.isfinite(t[lr][0])]
        if not finite:
            lines.append(f"| {label} | — | — | — | — | never trained without a divergence |")
            continue
        best = min(finite, key=lambda lr: t[lr][0])
        bm, bs, bn, _ = t[best]
        d = [runs[(ln_best_lr, s)][0] - ln[(ln_best_lr, s)][0] for s in (1, 2, 3)
             if (ln_best_lr, s) in runs and (ln_best_lr, s) in ln and not runs[(ln_best_lr, s)][1]]
        dm, ds = mean_std(d)
        paired = f"{dm:+.3f} ± {ds / math.sqrt(len(d)):.3f} se" if len(d) > 1 and math.isfinite(dm) else "—"
        bb = bm - lm
        bb_se = math.sqrt(bs ** 2 / bn + ls ** 2 / ln_n) if bn > 1 and ln_n > 1 else math.nan
        reading = "—" if label == "LayerNorm" else verdict(bb, bb_se)
        lines.append(f"| {label} | {best:g} | {fmt(bm, bs, bn)} | {paired} | {bb:+.3f} ± {bb_se:.3f} se | {reading} |")
    write_table(out, lines)


if __name__ == "__main__":
    main()
