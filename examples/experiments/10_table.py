"""Experiment 10's table: what z-loss 1e-4 costs in loss, under each weight-decay mode, by the lab's rules.

  /usr/bin/python3 examples/experiments/10_table.py runs/exp10_output_logits

Per weight-decay folder (wd0, independent, lr_scaled) and z-loss (0, 1e-4): the final validation
loss (the cross-entropy alone) per lr, mean ± std over seeds; best against best; and the paired
gap (same lr and seed) at the best lr without z-loss. Writes runs/exp10_output_logits/table.md.
"""
import math
import statistics
import sys

from exp_table import fmt, mean_std, per_lr, runs_of, verdict, write_table

FOLDERS = [("wd0", "weight decay 0"), ("independent", "independent 1e-4"), ("lr_scaled", "lr-scaled 0.1")]


def best(table):
    finite = {lr: v for lr, v in table.items() if math.isfinite(v[0])}
    return min(finite, key=lambda lr: finite[lr][0]) if finite else None


def main(out):
    lines = ["| weight decay | z-loss | val loss per lr (mean ± std, n) | best | z-loss − none, best vs best | "
             "paired at the best lr without z-loss |", "|---|---|---|---|---|---|"]
    for folder, label in FOLDERS:
        runs = {z: runs_of(out, folder, "layernorm", {"z-loss": z}) for z in ("0", "0.0001")}
        if not all(runs.values()):
            continue
        tables = {z: per_lr(r) for z, r in runs.items()}
        b0 = best(tables["0"])
        for z in ("0", "0.0001"):
            t = tables[z]
            cells = ", ".join(f"{lr:g}: {fmt(*t[lr][:3])}" for lr in sorted(t))
            bz = best(t)
            compare = paired = "—"
            if z != "0" and bz is not None and b0 is not None:
                (m1, s1, n1, _), (m0, s0, n0, _) = t[bz], tables["0"][b0]
                se = math.sqrt(s1 ** 2 / n1 + s0 ** 2 / n0)
                compare = f"{m1 - m0:+.3f} (2 se {2 * se:.3f}): {verdict(m1 - m0, se)}"
                d = [runs[z][(b0, s)].loss - runs["0"][(b0, s)].loss for (lr, s) in runs["0"] if lr == b0
                     and (b0, s) in runs[z]]
                if len(d) > 1:
                    m, sd = mean_std(d)
                    se = sd / math.sqrt(len(d))
                    paired = f"{m:+.3f} ± {se:.3f} se (n={len(d)}): {verdict(m, se)}"
            lines.append(f"| {label} | {z if z != '0.0001' else '1e-4'} | {cells} | "
                         f"{fmt(*t[bz][:3]) + f' at {bz:g}' if bz is not None else '—'} | {compare} | {paired} |")
    write_table(out, lines)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "runs/exp10_output_logits")
