#!/usr/bin/env python3
"""Experiment 11's table: each norm in float32, with bf16 GEMMs (norms float32), and with the norms in
bf16 too — best loss with its seed spread, the largest rate that trained, divergences, the residual
stream and attention logits at the best rate, and each arm's gap to its float32 twin (paired over
seeds at the twin's best rate; the lab's 2-standard-error rule, exp_table.py).

    11_precision_table.py runs/exp11_precision    # prints Markdown, writes runs/exp11_precision/table.md
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exp_table import fmt, mean_std, per_lr, runs_of, verdict, write_table  # noqa: E402

VOCAB = 65  # tinyshakespeare's characters: the loss at initialisation is ln 65 = 4.17

NORMS = [("layernorm", "LayerNorm"), ("rmsnorm", "RMSNorm"), ("dyt", "DyT"), ("none", "no norm")]
MODES = [  # (label, folder, settings that pick the runs)
    ("fp32", "fp32", {}),
    ("bf16 GEMMs, norms fp32", "bf16", {"norm-precision": "fp32"}),
    ("bf16 GEMMs, norms bf16", "bf16", {"norm-precision": "bf16"}),
    ("bf16 GEMMs, norms bf16, eps 1e-6", "eps", {}),
]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "runs/exp11_precision"
    lines = ["| norm | precision | best lr | best loss (mean ± std, n) | LR sensitivity (7 rates) | largest lr without a divergence | "
             "diverged runs | peak residual RMS | peak attention logit | gap to fp32 at its best lr (paired) | reading |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for norm, label in NORMS:
        twin = runs_of(out, "fp32", norm, {})
        if not twin:
            sys.exit(f"11_precision_table.py: no float32 {label} runs in {out}/fp32 (run 11_precision.sh first)")
        twin_table = per_lr(twin)
        twin_finite = [lr for lr in twin_table if math.isfinite(twin_table[lr][0])]
        twin_best = min(twin_finite, key=lambda lr: twin_table[lr][0]) if twin_finite else None
        for mode, folder, want in MODES:
            runs = runs_of(out, folder, norm, want)
            if not runs or (norm == "none" and want.get("norm-precision") == "bf16"):
                continue  # no norm has nothing to compute in bf16: that arm is its norms-fp32 twin
            t = per_lr(runs)
            finite = [lr for lr in t if math.isfinite(t[lr][0])]
            diverged = sum(r.diverged for r in runs.values())
            if not finite:
                lines.append(f"| {label} | {mode} | — | — | none | {diverged}/{len(runs)} | — | — | — | never trained |")
                continue
            best = min(finite, key=lambda lr: t[lr][0])
            bm, bs, bn, _ = t[best]
            at_best = [r for (lr, _), r in runs.items() if lr == best]
            residual = max(r.peak_residual for r in at_best)
            logit = max(r.peak_logit for r in at_best)
            gap, reading = "—", "—"
            if folder != "fp32" and twin_best is not None:
                d = [runs[(twin_best, s)].loss - twin[(twin_best, s)].loss for s in (1, 2, 3)
                     if (twin_best, s) in runs and (twin_best, s) in twin and not runs[(twin_best, s)].diverged]
                dm, ds = mean_std(d)
                if len(d) > 1 and math.isfinite(dm):
                    se = ds / math.sqrt(len(d))
                    gap, reading = f"{dm:+.4f} ± {se:.4f} se", verdict(dm, se)
            # Wortsman et al. 2023's LR sensitivity: the mean over the grid of min(loss, initial loss)
            # minus the best, a diverged rate counting as the initial loss (ln V at init).
            cap = math.log(VOCAB)
            sens = sum(min(t[lr][0], cap) if math.isfinite(t[lr][0]) else cap for lr in t) / len(t) - bm
            lines.append(f"| {label} | {mode} | {best:g} | {fmt(bm, bs, bn)} | {sens:.3f} | {max(finite):g} | {diverged}/{len(runs)} | "
                         f"{residual:.2f} | {logit:.1f} | {gap} | {reading} |")
    lines += ["", "LR sensitivity over the 7-rate grid 3e-4 … 3e-1 (Wortsman et al. 2023's: the mean of min(loss, ln 65) "
              "minus the best; a rate where a seed diverged counts as ln 65). No norm in bf16 is its norms-fp32 row: "
              "there is no norm to compute in bf16."]
    write_table(out, lines)


if __name__ == "__main__":
    main()
