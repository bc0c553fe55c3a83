"""Experiment 08's tables: the edge of stability measured, and where the sharpness lives.

  /usr/bin/python3 examples/experiments/08_eos_table.py runs/exp8_eos

Reads each folder's curves.csv (08_edge_of_stability.sh writes gd, gd_untied, adam, sgd_minibatch)
and writes runs/exp8_eos/table.md. Per norm and learning rate, over the measurements from step 100
to the end (after the sharpening), each figure the mean over seeds of every seed's median, with the
seeds' range:
  - lambda / (2/eta): the top Hessian eigenvalue of the loss descended (full batch) or of a fixed
    sample (mini-batch) over gradient descent's threshold (Adam: lambda_1(P^-1 H) over 38/eta);
  - step curvature / (2/eta): g'Hg/g'g, the curvature along the step itself: the quadratic model
    lowers the loss along -eta g only below 1 (for a full batch it is the batch sharpness of its one
    batch, Andreyev & Beneventano 2024);
  - step on the top eigenvector: (y'g)^2/g'g;
  - period 2: the fraction of steps whose loss change has the sign opposite to the previous one
    (0 for a loss that falls smoothly, ~0.5 for noise, 1 for a loss that goes up and down in turn),
    and the oscillation's size, the median |L_t - (L_{t-1} + L_{t+1})/2|;
  - the top eigenvector's mass per parameter group (lm/sharpness.h) and its radial part along the
    weights that write the residual stream (the scale-invariant set with an untied head);
  - ||w_S||, those weights' norm, at the first measurement and at the last: the growth that lowers
    the sharpness of scale-invariant weights as 1/||w_S||^2 (Lyu, Li & Arora 2022); and
    lambda ||w_S||^2 — the sharpness on their unit sphere — at the window's end over its start.
"""
import csv
import math
import os
import statistics
import sys
from collections import defaultdict

from exp_table import number, write_table

GROUPS = ["embeddings", "attn_in", "attn_out", "mlp_in", "mlp_out", "norms", "head"]
STREAM = ["embeddings", "attn_out", "mlp_out"]
WINDOW = 100  # measurements from this step on: after the sharpening


def read_curves(folder):
    """(norm, lr) -> seed -> list of curve rows (dicts of floats, 'step' an int), for the runs that
    did not diverge; and (norm, lr) -> the diverged runs' "seed s at step n"."""
    diverged, gone = {}, defaultdict(list)
    with open(os.path.join(folder, "runs.csv"), newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r["diverged"] == "1":
                diverged[r["run_id"]] = True
                gone[(r["norm"], float(r["lr"]))].append(f"seed {r['seed']} at step {r['divergence_step']}")
    runs = defaultdict(lambda: defaultdict(list))
    with open(os.path.join(folder, "curves.csv"), newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["run_id"] in diverged:
                continue
            key = (row["norm"], float(row["lr"]))
            runs[key][row["seed"]].append({k: (int(v) if k == "step" else number(v)) for k, v in row.items()
                                           if k not in ("run_id", "norm", "placement", "settings")})
    return runs, gone


def seeds_summary(per_seed):
    """mean [min-max] of the seeds' values (NaN ones left out)."""
    xs = [x for x in per_seed if not math.isnan(x)]
    if not xs:
        return "—"
    mean = statistics.fmean(xs)
    return f"{mean:.2f} [{min(xs):.2f}–{max(xs):.2f}]" if len(xs) > 1 else f"{mean:.2f}"


def median_of(rows, f):
    xs = [f(r) for r in rows]
    xs = [x for x in xs if not math.isnan(x)]
    return statistics.median(xs) if xs else math.nan


def measured(rows):
    return [r for r in rows if not math.isnan(r.get("sharpness", math.nan)) and r["step"] >= WINDOW]


def period2(rows):
    """(fraction of alternating loss changes, median size of the period-2 component) from step WINDOW."""
    loss = [r["loss"] for r in rows if r["step"] >= WINDOW]
    d = [b - a for a, b in zip(loss, loss[1:])]
    alt = [1.0 if x * y < 0 else 0.0 for x, y in zip(d, d[1:])]
    wiggle = [abs(loss[t] - (loss[t - 1] + loss[t + 1]) / 2) for t in range(1, len(loss) - 1)]
    return (statistics.fmean(alt) if alt else math.nan, statistics.median(wiggle) if wiggle else math.nan)


def stream_norm(r):
    return math.sqrt(sum(r.get("weight_norm_" + g, math.nan) ** 2 for g in STREAM))


def edge_ratio(r):
    if not math.isnan(r.get("precond_sharpness", math.nan)):
        return r["precond_sharpness"] / r["precond_threshold"]
    return r["sharpness"] / r["sharpness_threshold"]


def full_batch_table(name, curves):
    runs, gone = curves
    lines = [f"### {name}: the edge and the anatomy (steps {WINDOW}–300)", "",
             "| norm | lr | λ₁ / threshold | step curvature / (2/η) | step on the top eigenvector | period 2: "
             "alternating changes | period 2: size | ‖w_S‖ first → last | λ₁‖w_S‖² last / first | radial mass | "
             + " | ".join(f"mass {g}" for g in GROUPS) + " |",
             "|" + "---|" * (10 + len(GROUPS))]
    for (norm, lr) in sorted(runs):
        seeds = runs[(norm, lr)]
        edge, curv, overlap, alt, size, radial, first, last, sphere = ([] for _ in range(9))
        mass = defaultdict(list)
        for rows in seeds.values():
            m = measured(rows)
            edge.append(median_of(m, edge_ratio))
            curv.append(median_of(m, lambda r: r["step_curvature"] / (2 / r["lr_now"])))
            overlap.append(median_of(m, lambda r: r["top_step_overlap"]))
            a, s = period2(rows)
            alt.append(a), size.append(s)
            radial.append(median_of(m, lambda r: r["stream_radial_mass"]))
            all_measured = [r for r in rows if not math.isnan(r.get("sharpness", math.nan))]
            if all_measured:
                first.append(stream_norm(all_measured[0])), last.append(stream_norm(all_measured[-1]))
                # The sharpness on the unit sphere of the scale-invariant set, at the window's start and end.
                w = [r for r in all_measured if r["step"] >= WINDOW]
                if w:
                    s0, s1 = w[0]["sharpness"] * stream_norm(w[0]) ** 2, w[-1]["sharpness"] * stream_norm(w[-1]) ** 2
                    sphere.append(s1 / s0 if s0 > 0 else math.nan)
            for g in GROUPS:
                mass[g].append(statistics.fmean([r["top_mass_" + g] for r in m]) if m else math.nan)
        growth = (f"{statistics.fmean(first):.1f} → {statistics.fmean(last):.1f}" if first else "—")
        label = f"{lr:g}" + (f" ({len(seeds)} seeds; diverged: {', '.join(gone[(norm, lr)])})" if gone.get((norm, lr)) else "")
        lines.append(f"| {norm} | {label} | {seeds_summary(edge)} | {seeds_summary(curv)} | {seeds_summary(overlap)} | "
                     f"{seeds_summary(alt)} | {seeds_summary(size)} | {growth} | {seeds_summary(sphere)} | {seeds_summary(radial)} | "
                     + " | ".join(f"{statistics.fmean(mass[g]):.2f}" if not any(map(math.isnan, mass[g])) else "—"
                                  for g in GROUPS) + " |")
    return lines


def minibatch_table(curves):
    runs, gone = curves
    lines = [f"### mini-batch SGD: batch sharpness beside λ₁ (steps {WINDOW}–300)", "",
             "| norm | lr | batch sharpness / (2/η) | mean λ₁(H_B) / (2/η) | λ₁ of the fixed sample / (2/η) | "
             "step curvature on the sample / (2/η) |", "|---|---|---|---|---|---|"]
    for (norm, lr) in sorted(runs):
        seeds = runs[(norm, lr)]
        cols = [[], [], [], []]
        for rows in seeds.values():
            m = measured(rows)
            cols[0].append(median_of(m, lambda r: r["batch_sharpness"] / r["sharpness_threshold"]))
            cols[1].append(median_of(m, lambda r: r["batch_lambda_max"] / r["sharpness_threshold"]))
            cols[2].append(median_of(m, lambda r: r["sharpness"] / r["sharpness_threshold"]))
            cols[3].append(median_of(m, lambda r: r["step_curvature"] / r["sharpness_threshold"]))
        label = f"{lr:g}" + (f" ({len(seeds)} seeds; diverged: {', '.join(gone[(norm, lr)])})" if gone.get((norm, lr)) else "")
        lines.append(f"| {norm} | {label} | " + " | ".join(seeds_summary(c) for c in cols) + " |")
    return lines


def main(out):
    lines = []
    for name, title in [("gd", "full-batch GD, tied head"), ("gd_untied", "full-batch GD, untied head"),
                        ("adam", "full-batch Adam (λ₁(P⁻¹H) / 38/η)")]:
        if os.path.exists(os.path.join(out, name, "curves.csv")):
            lines += full_batch_table(title, read_curves(os.path.join(out, name))) + [""]
    if os.path.exists(os.path.join(out, "sgd_minibatch", "curves.csv")):
        lines += minibatch_table(read_curves(os.path.join(out, "sgd_minibatch"))) + [""]
    lines.append("Each cell: the mean over seeds of each seed's median over the window [the seeds' range]; "
                 "w_S: the weights that write the residual stream (embeddings, attention's and the MLP's output "
                 "projections); mass: ‖y_G‖² of the top eigenvector y per parameter group.")
    write_table(out, lines)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "runs/exp8_eos")
