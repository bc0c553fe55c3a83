#!/usr/bin/env python3
"""Plots of a compare_norms sweep, from its CSV files (nothing here is needed to read the results:
report.md and the console summary come from the C++ side).

    python3 lab/plot_lab.py runs/lab [--reference-lr 0.003]
    python3 lab/plot_lab.py --args-on-stdin    # the same arguments, read from standard input
                                                    # (each ended by a NUL byte) after the imports

Writes into runs/lab/plots/ (sharpness.png only for sweeps run with --sharpness-every):
  loss_vs_lr.png     final validation loss vs learning rate per norm, mean ± std over seeds; x = diverged
  loss_curves.png    training loss at the reference learning rate (every seed, smoothed)
  residual_rms.png   scale drift: RMS of the residual stream entering each block (solid) and of the
                     normalised copy the attention reads (dashed), per norm, at the reference lr
  attention_logit.png the largest attention logit (over layers) per step
  grad_norm.png      the global gradient norm per step
  limits_vs_lr.png   each column the report judges runs by (sweep.json's schema: the peak attention
                     logit, the lowest mean log Z — the LM head's logsumexp — and any column a program
                     registered) vs learning rate, median over seeds, a panel each, its limit dotted
  log_z.png          mean log Z per step at the largest learning rate, where output-logit drift shows first
  output_logit.png   the mean output (LM-head) logit per step at the largest learning rate: what
                     Wortsman et al. 2023 (§3.2) plot for output-logit divergence
and runs/lab/report.html: report.md's tables with the figures interactive (hover a point or a curve
to see its run, click a legend entry to hide or show a norm), one self-contained file that works
offline (plotly.js inside it; Debian: python3-plotly; without plotly it is skipped with a note).

Needs matplotlib and numpy (Debian: python3-matplotlib); without them it exits with status 3
(NO_MATPLOTLIB) and prints nothing. On Debian use /usr/bin/python3.
"""
import argparse
import csv
import gc
import io
import json
import math
import os
import re
import signal
import stat
import sys
import traceback
from collections import defaultdict

# The exit status when this interpreter cannot import matplotlib or numpy, with nothing printed:
# the callers (compare_norms, tapegrad.lab) then try another Python or note the plots as skipped,
# so they need no import probe of their own (half a second of numpy's start-up).
NO_MATPLOTLIB = 3
os.environ["OPENBLAS_NUM_THREADS"] = "1"  # numpy's BLAS threads: nothing here needs them, and draw() forks
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    import numpy as np
except ImportError:
    sys.exit(NO_MATPLOTLIB)

# Colours cycle over the groups in their sorted order (main fixes them before drawing): no per-norm
# table, so a newly registered norm is drawn like the others.
PALETTE = plt.rcParams["axes.prop_cycle"].by_key()["color"]
COLORS = {}
STYLES = {"pre": "-", "post": "--"}


class Schema:
    """The folder's record schema, as compare_norms wrote it into sweep.json ("schema": lab/records.h):
    the columns' former names, and the limits the report judges runs by. A folder whose sweep.json
    predates it reads its columns as they are named, and its figures draw no limits."""

    def __init__(self, j):
        ok = isinstance(j, dict) and isinstance(j.get("renamed", {}), dict) and isinstance(j.get("runs", []), list) \
            and isinstance(j.get("renamed_prefixes", {}), dict)
        if not ok:
            raise ValueError("'schema' must be an object with 'runs' (a list) and 'renamed' (an object)")
        self.renamed = {str(k): str(v) for k, v in j.get("renamed", {}).items()}
        self.prefixes = {str(k): str(v) for k, v in j.get("renamed_prefixes", {}).items()}
        self.runs = {c["name"]: c for c in j.get("runs", []) if isinstance(c, dict) and isinstance(c.get("name"), str)}

    def current_column(self, name):
        for old, new in self.prefixes.items():
            if name.startswith(old):
                return new + name[len(old):]
        return self.renamed.get(name, name)

    def limit(self, column, which):
        """The column's flag_above / flag_below, or None."""
        v = self.runs.get(column, {}).get(which)
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) else None

    def judging(self):
        """The run columns the report judges runs by (a limit: flag_above or flag_below), tapegrad's
        and any a program registered, in runs.csv's order: [(name, heading, [(limit, "above"|"below")])]."""
        out = []
        for name, c in self.runs.items():
            limits = [(v, word) for word in ("above", "below") if (v := self.limit(name, "flag_" + word)) is not None]
            if limits:
                heading = c.get("flag_name") if isinstance(c.get("flag_name"), str) and c.get("flag_name") else name
                out.append((name, heading, limits))
        return out


# The columns every figure reads; the others are each figure's own (one missing: that figure is
# not drawn, and named).
RUNS_COLUMNS = ["run_id", "norm", "placement", "lr", "seed"]
CURVES_COLUMNS = ["run_id", "norm", "placement", "lr", "seed", "step"]


def open_regular(path, **text):
    """Opens a regular file for reading as text: a FIFO or device would block or never end, so the
    file is opened without blocking and checked before it is read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, encoding="utf-8", **text)


def read_csv(path, schema):
    try:
        with open_regular(path, newline="") as f:
            reader = csv.reader(f)
            header = [schema.current_column(c) for c in next(reader, [])]
            return [dict(zip(header, row)) for row in reader]
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        sys.exit(f"plot_lab.py: {path} is not a readable CSV file: {e}")


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return math.nan


def load_grid(out):
    """The folder's sweep.json as an object ({} when there is none): its schema, run identity,
    settings and recipes, as compare_norms wrote them for the folder's readers."""
    grid = os.path.join(out, "sweep.json")
    if not os.path.lexists(grid):
        return {}
    try:
        with open_regular(grid) as f:
            g = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        sys.exit(f"plot_lab.py: {grid} is not readable JSON: {e}")
    if not (isinstance(g, dict) and isinstance(g.get("train_text", {}), dict) and isinstance(g.get("recipe_targets", {}), dict)
            and all(isinstance(t, dict) for t in g.get("recipe_targets", {}).values())):
        sys.exit(f"plot_lab.py: {grid}: expected an object whose 'train_text' is an object and whose 'recipe_targets' "
                 "maps recipe names to objects")
    try:
        g["schema"] = Schema(g.get("schema", {}))
    except ValueError as e:
        sys.exit(f"plot_lab.py: {grid}: {e}")
    return g


def run_settings(run, out):
    """A run's swept settings from its runs.csv cell ("dim=64;qk-norm=rmsnorm"), each key=value;
    a cell that is not (a hand-edited file) ends the script with a message naming it."""
    cell = run.get("settings") or ""
    items = [kv for kv in cell.split(";") if kv]
    bad = [kv for kv in items if "=" not in kv or not kv.split("=", 1)[0]]
    if bad:
        sys.exit(f"plot_lab.py: {os.path.join(out, 'runs.csv')}: run {run.get('run_id')!r}: its settings cell "
                 f"{cell[:80]!r} holds {bad[0][:40]!r}, not key=value")
    return dict(kv.split("=", 1) for kv in items)


def make_group_key(runs, out, g):
    """The label of a run's group: norm/placement plus every other axis that varies, as report.md
    labels it (" L8", " w0", " dim=64"); curve rows are matched to their run by run_id."""
    settings = {r["run_id"]: run_settings(r, out) for r in runs}
    grid = os.path.join(out, "sweep.json")
    base = {str(k): str(v) for k, v in g.get("train_text", {}).items()}  # each setting as runs.csv writes it
    recipe_targets = g.get("recipe_targets", {})  # recipe -> {setting: value of the runs it is for}
    # The settings every run id names, with their prefixes (lab/run_spec.h); a sweep.json older
    # than its "identity" entry: norm and placement.
    identity = g.get("identity", [["norm", ""], ["placement", ""]])
    columns = set(runs[0]) if runs else set()
    well_formed = isinstance(identity, list) and all(
        isinstance(p, list | tuple) and len(p) == 2 and all(isinstance(x, str) for x in p) and p[0] in columns
        for p in identity)
    if not well_formed:
        sys.exit(f"plot_lab.py: {grid}: 'identity' must be a list of [column of runs.csv, id prefix] pairs, "
                 f"got {json.dumps(identity)[:80]}")
    identity = [tuple(p) for p in identity]
    names = sorted({k for s in settings.values() for k in s})
    # The identity's columns beyond norm and placement (always in the label), but lr and seed
    # (what a group's runs differ in): as the id writes them (" L8", " w0") where they vary.
    shown = [(k, prefix) for k, prefix in identity if k not in ("norm", "placement", "lr", "seed")]
    vary_identity = [(k, prefix) for k, prefix in shown if len({r[k] for r in runs}) > 1]
    vary = [k for k in names if len({settings[r["run_id"]].get(k, base.get(k, "base")) for r in runs}) > 1]

    def group_key(row):
        key = f"{row['norm']}/{row['placement']}"
        for k, prefix in vary_identity:
            key += f" {prefix}{row[k]}" if prefix else f" {k}={row[k]}"
        s = settings.get(row["run_id"], {})
        for k in vary:
            key += f" {k}={s.get(k, base.get(k, 'base'))}"
        recipe = s.get("recipe", base.get("recipe", "none"))
        # "papers" puts each run on the recipe aimed at it (lm/recipes.h).
        for name in (list(recipe_targets) if recipe == "papers" else [recipe]):
            target = recipe_targets.get(name, {})
            if "recipe" not in vary and target and all(row.get(k) == v for k, v in target.items()):
                key += f" ({name})"  # the published recipe the group ran with, as report.md names it
        return key
    return group_key


def make_style(group_key):
    """A colour per group apart from its placement (the norm and any other varying axis), a line
    style per placement."""
    def style(row):
        key = group_key(row).replace("/" + row["placement"], "", 1)
        color = COLORS.setdefault(key, PALETTE[len(COLORS) % len(PALETTE)])
        return dict(color=color, linestyle=STYLES.get(row["placement"], "-"))
    return style


def natural(key):
    """Sort key that orders "dim=8" before "dim=16" and "alpha=2" before "alpha=32"."""
    return [float(t) if t.replace(".", "", 1).isdigit() else t for t in re.split(r"(\d+(?:\.\d+)?)", key)]


def ema(values, alpha=0.1):
    out, acc = [], None
    for v in values:
        if math.isfinite(v):
            acc = v if acc is None else (1 - alpha) * acc + alpha * v
        out.append(acc if acc is not None else math.nan)
    return out


def log_scale(ax, which):
    """A log scale on ax's "x" or "y" axis, without minor ticks: matplotlib builds an object per
    minor tick, and laying them out was most of a figure's time (residual_rms: 1.4 of 2.4 s). The
    grid follows the major ticks either way."""
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    (ax.xaxis if which == "x" else ax.yaxis).set_minor_locator(matplotlib.ticker.NullLocator())


def make_plots_dir(path):
    """Creates the plots folder, or accepts it if it is a real directory: never a link to elsewhere."""
    try:
        os.mkdir(path)
    except FileExistsError:
        pass
    if os.path.islink(path) or not os.path.isdir(path):
        sys.exit(f"plot_lab.py: {path} is a link or not a directory; plots are written only into a directory of the folder")


def save(fig, path, dpi):
    """Writes the figure as a PNG at `path` and closes it. The bytes go to a new file beside it
    (O_EXCL | O_NOFOLLOW), which then replaces `path`: a link planted at `path` is replaced, never
    written through, and a reader never sees half a file."""
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=dpi)
    plt.close(fig)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(png.getbuffer())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def finish(fig, ax, path, title, xlabel, ylabel, log=None):
    """Labels, grid and legend on one axis, `log` ("x", "y") on a log scale; the figure written to
    `path` and closed."""
    if log:
        log_scale(ax, log)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    save(fig, path, dpi=120)


def draw_one(name, fn):
    """Draws one figure. A failure is named and the other figures still drawn: a column missing
    from the folder's CSV files (older or edited ones) in one line, anything else with its traceback."""
    try:
        fn()
        return True
    except KeyError as e:
        print(f"plot_lab.py: {name} not drawn: the CSV files have no column {e}", file=sys.stderr)
    except Exception:
        print(f"plot_lab.py: {name} not drawn:", file=sys.stderr)
        traceback.print_exc()
    plt.close("all")
    return False


def draw(figures):
    """Draws `figures` (name, panels, function) on two processes when the machine has two cores:
    each process takes the next undrawn figure, the ones with most panels first, so the two finish
    together whatever the sweep's shape. Matplotlib draws on one core, and a figure's cost is mostly
    its axes' text layout, not its points. The data are read once, before the fork. Returns the exit
    status: 1 if a figure failed in either process, else 0."""
    figures = sorted(figures, key=lambda f: -f[1])  # stable: equal panels keep their order
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if len(figures) < 2 or cores < 2 or not hasattr(os, "fork"):
        return 0 if all([draw_one(name, fn) for name, _, fn in figures]) else 1
    queue, feed = os.pipe()
    os.write(feed, bytes(range(len(figures))))  # one byte per figure (fewer than 256); reads of 1 byte are atomic
    os.close(feed)

    def work():
        ok = True
        while index := os.read(queue, 1):
            name, _, fn = figures[index[0]]
            ok = draw_one(name, fn) and ok
        return ok

    sys.stdout.flush(), sys.stderr.flush()
    gc.freeze()  # else the child's collector writes to every object's header, copying the whole heap page by page
    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            ok = work()
        finally:  # never back into the parent's code, whatever happened
            sys.stderr.flush()
            os._exit(0 if ok else 1)
    try:
        ok = work()
    finally:
        _, wait_status = os.waitpid(pid, 0)
    return 0 if ok and os.waitstatus_to_exitcode(wait_status) == 0 else 1


def args_on_stdin():
    """The arguments, read from standard input once the caller closes it: each ended by a NUL byte,
    decoded as the interpreter decodes argv. None when the input ends with nothing sent (the caller
    no longer needs the plots: its sweep was stopped) or mid-argument (the caller died)."""
    # Ctrl-C at the terminal reaches this process too; the caller stops its sweep on it and closes
    # the input, so the interrupt is its to handle, not a traceback here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    data = sys.stdin.buffer.read()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if not data.endswith(b"\0"):
        return None
    return [os.fsdecode(a) for a in data[:-1].split(b"\0")]


def markdown_html(text):
    """report.md as HTML: headings, tables, lists and paragraphs (the forms the report writes)."""
    import html as h

    def inline(t):
        t = h.escape(t)
        t = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", t)
        return re.sub(r"`(.+?)`", r"<code>\1</code>", t)
    out, table, para, items = [], [], [], []

    def flush():
        if table:
            rows = [r for r in table if not re.fullmatch(r"\|[\s:|-]+\|", r.strip())]
            cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows]
            out.append("<table><thead><tr>" + "".join(f"<th>{inline(c)}</th>" for c in cells[0]) + "</tr></thead><tbody>"
                       + "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in r) + "</tr>" for r in cells[1:])
                       + "</tbody></table>")
            table.clear()
        if items:
            out.append("<ul>" + "".join(f"<li>{inline(i)}</li>" for i in items) + "</ul>")
            items.clear()
        if para:
            out.append(f"<p>{inline(' '.join(para))}</p>")
            para.clear()
    for line in text.splitlines():
        if line.startswith("|"):
            if not table:
                flush()
            table.append(line)
            continue
        if table:
            flush()
        if not line.strip():
            flush()
        elif m := re.match(r"(#+)\s+(.*)", line):
            flush()
            level = min(len(m.group(1)), 4)
            out.append(f"<h{level}>{inline(m.group(2))}</h{level}>")
        elif line.startswith("- "):
            if para:
                flush()
            items.append(line[2:])
        elif items and line.startswith("  "):
            items[-1] += " " + line.strip()
        elif line.startswith("!["):
            continue  # the PNG figures: the page draws its own
        else:
            para.append(line.strip())
    flush()
    return "\n".join(out)


def write_report_html(out, runs, curves, group_key, ref_lr, judged=()):
    """report.html: report.md's text and tables, and the lab's figures drawn by plotly (interactive:
    hover shows the run, the legend toggles a configuration); plotly.js is written into the page."""
    try:
        import plotly.graph_objects as go
        from plotly.offline import get_plotlyjs
    except ImportError:
        print("plot_lab.py: report.html skipped (no plotly: Debian's python3-plotly)", file=sys.stderr)
        return
    import html as h
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"]
    keys = sorted({group_key(r) for r in runs}, key=natural)
    color = {k: palette[i % len(palette)] for i, k in enumerate(keys)}
    figures = []

    def layout(fig, title, xtitle, ytitle, logx=False, logy=False):
        fig.update_layout(title=title, xaxis_title=xtitle, yaxis_title=ytitle, template="plotly_white",
                          height=460, margin=dict(l=60, r=20, t=60, b=50), legend=dict(groupclick="togglegroup"))
        if logx:
            fig.update_xaxes(type="log")
        if logy:
            fig.update_yaxes(type="log")
        figures.append(fig)

    # Final validation loss per lr: each seed's point (hover: its run), the mean over seeds as a line.
    fig = go.Figure()
    for k in keys:
        mine = [r for r in runs if group_key(r) == k]
        lrs = sorted({num(r["lr"]) for r in mine})
        means = []
        for lr in lrs:
            ok = [num(r["final_val_loss"]) for r in mine if num(r["lr"]) == lr and r["diverged"] == "0"
                  and math.isfinite(num(r["final_val_loss"]))]
            means.append(sum(ok) / len(ok) if ok else None)
        fig.add_trace(go.Scatter(x=lrs, y=means, mode="lines", name=k, legendgroup=k, line=dict(color=color[k]),
                                 hovertemplate=f"{h.escape(k)}<br>lr %{{x:g}}<br>mean val %{{y:.4f}}<extra></extra>"))
        pts = [r for r in mine if r["diverged"] == "0" and math.isfinite(num(r["final_val_loss"]))]
        fig.add_trace(go.Scatter(x=[num(r["lr"]) for r in pts], y=[num(r["final_val_loss"]) for r in pts], mode="markers",
                                 name=k + " runs", legendgroup=k, showlegend=False, marker=dict(color=color[k], size=7),
                                 text=[r["run_id"] for r in pts],
                                 hovertemplate="%{text}<br>val %{y:.4f}<extra></extra>"))
        bad = [r for r in mine if not (r["diverged"] == "0" and math.isfinite(num(r["final_val_loss"])))]
        if bad:
            fig.add_trace(go.Scatter(x=[num(r["lr"]) for r in bad], y=[num(r["initial_loss"]) for r in bad],
                                     mode="markers", name=k + " diverged", legendgroup=k, showlegend=False,
                                     marker=dict(color=color[k], symbol="x", size=10), text=[r["run_id"] for r in bad],
                                     hovertemplate="%{text}<br>diverged (drawn at the initial loss)<extra></extra>"))
    layout(fig, "Final validation loss vs learning rate (points: runs; line: mean over seeds; ×: diverged)",
           "peak learning rate", "final validation loss", logx=True)

    # Each column the report judges runs by (Schema.judging): every run's value vs lr, the limit dotted.
    for name, heading, limits in judged:
        fig = go.Figure()
        for k in keys:
            pts = [r for r in runs if group_key(r) == k and math.isfinite(num(r.get(name)))]
            if pts:
                fig.add_trace(go.Scatter(x=[num(r["lr"]) for r in pts], y=[num(r[name]) for r in pts], mode="markers",
                                         name=k, legendgroup=k, marker=dict(color=color[k], size=7),
                                         text=[r["run_id"] for r in pts],
                                         hovertemplate=f"%{{text}}<br>{h.escape(name)} %{{y:.4g}}<extra></extra>"))
        for limit, word in limits:
            fig.add_hline(y=limit, line_dash="dot", annotation_text=f"{word} {limit:g}: flagged")
        layout(fig, f"{h.escape(heading)}: {h.escape(name)} of each run vs learning rate (dotted: the limit)",
               "peak learning rate", name, logx=True)

    by_run = defaultdict(list)
    for c in curves:
        by_run[c["run_id"]].append(c)

    def per_step(column, title, ytitle, logy=False, lr=ref_lr, transform=None):
        fig = go.Figure()
        shown = set()
        drawn = 0
        for run_id, rows in sorted(by_run.items()):
            if abs(num(rows[0]["lr"]) - lr) > 1e-12 * lr or column not in rows[0]:
                continue
            k = group_key(rows[0])
            pts = [(int(c["step"]), transform(c) if transform else num(c[column])) for c in rows]
            pts = [p for p in pts if math.isfinite(p[1])]
            if not pts:
                continue
            fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines", name=k,
                                     legendgroup=k, showlegend=k not in shown, line=dict(color=color[k], width=1.5),
                                     hovertemplate=f"{h.escape(run_id)}<br>step %{{x}}<br>%{{y:.4g}}<extra></extra>"))
            shown.add(k)
            drawn += 1
        if drawn:
            layout(fig, title, "step", ytitle, logy=logy)

    per_step("loss", f"Training loss per step at lr {ref_lr:g} (every seed)", "training loss")
    per_step("final_residual_rms", f"Residual stream RMS after the last block, lr {ref_lr:g}", "RMS", logy=True)
    per_step("grad_norm", f"Global gradient norm per step, lr {ref_lr:g}", "gradient norm", logy=True)
    per_step("output_logit_mean", f"Mean output logit per step, lr {max(num(r['lr']) for r in runs):g}",
             "mean output logit", lr=max(num(r["lr"]) for r in runs))
    if curves and "sharpness" in curves[0]:
        for lr in sorted({num(r["lr"]) for r in runs}):
            per_step("sharpness", f"Sharpness over its threshold, lr {lr:g} (1: the edge)", "sharpness / threshold",
                     lr=lr, transform=lambda c: num(c["precond_sharpness"]) / num(c["precond_threshold"])
                     if math.isfinite(num(c["precond_sharpness"])) else num(c["sharpness"]) / num(c["sharpness_threshold"]))

    report_md = os.path.join(out, "report.md")
    body = ""
    if os.path.isfile(report_md) and not os.path.islink(report_md):
        with open(report_md, encoding="utf-8") as f:
            body = markdown_html(f.read())
    divs = "\n".join(f.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False})
                     for f in figures)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tapegrad lab report: {h.escape(os.path.basename(os.path.abspath(out)))}</title>
<script>{get_plotlyjs()}</script>
<style>body{{font-family:sans-serif;max-width:1200px;margin:auto;padding:0 1em}}table{{border-collapse:collapse;margin:1em 0;font-size:90%}}
td,th{{border:1px solid #ccc;padding:3px 6px;text-align:left}}th{{background:#f3f3f3}}code{{background:#f6f6f6}}</style>
</head><body>
<h1>Figures</h1>
<p>Hover a point or a curve to see its run; click a legend entry to hide or show a configuration (double-click: that one alone).</p>
{divs}
{body}
</body></html>
"""
    path = os.path.join(out, "report.html")
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(page)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="a compare_norms output directory")
    ap.add_argument("--reference-lr", type=float, default=None, help="lr of the per-step plots (default: smallest)")
    ap.add_argument("--args-on-stdin", action="store_true",
                    help="alone: import matplotlib, then read the arguments from standard input, each ended by a NUL byte")
    args = ap.parse_args(argv)
    if args.args_on_stdin:
        ap.error("--args-on-stdin comes alone: the other arguments are read from standard input")
    if args.reference_lr is not None and not (math.isfinite(args.reference_lr) and args.reference_lr > 0):
        ap.error(f"--reference-lr must be a positive learning rate, got {args.reference_lr:g}")

    runs_path, curves_path = os.path.join(args.out, "runs.csv"), os.path.join(args.out, "curves.csv")
    for p in (runs_path, curves_path):
        if not os.path.lexists(p):
            sys.exit(f"plot_lab.py: {p} not found (run compare_norms first)")
    grid = load_grid(args.out)
    schema = grid.get("schema") or Schema({})
    runs, curves = read_csv(runs_path, schema), read_csv(curves_path, schema)
    if not runs:
        sys.exit(f"plot_lab.py: {runs_path} has no runs")
    for path, rows, need in ((runs_path, runs, RUNS_COLUMNS), (curves_path, curves, CURVES_COLUMNS)):
        if rows and (missing := [c for c in need if c not in rows[0]]):
            sys.exit(f"plot_lab.py: {path} has no column {', '.join(missing)} (is it a compare_norms folder?)")
    for path, rows in ((runs_path, runs), (curves_path, curves)):
        if bad := next((r for r in rows if not (math.isfinite(num(r.get("lr"))) and num(r.get("lr")) > 0)), None):
            sys.exit(f"plot_lab.py: {path}: run {bad.get('run_id')!r} has lr {bad.get('lr')!r}; "
                     "a learning rate is a positive number")
    plots = os.path.join(args.out, "plots")
    make_plots_dir(plots)
    group_key = make_group_key(runs, args.out, grid)
    style = make_style(group_key)
    lrs = sorted({num(r["lr"]) for r in runs})
    ref_lr = args.reference_lr if args.reference_lr is not None else lrs[0]
    ref_lr = min(lrs, key=lambda lr: abs(math.log(lr) - math.log(ref_lr)))
    figures = []  # (file name, panels, function drawing it)

    groups = defaultdict(lambda: defaultdict(list))
    first_of = {}
    for r in runs:
        k = group_key(r)
        groups[k][num(r["lr"])].append(r)
        first_of.setdefault(k, r)
    for k in sorted(groups, key=natural):
        style(first_of[k])  # every group's colour fixed before the figures are shared out

    # 1. Final validation loss vs learning rate.
    def loss_vs_lr():
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for k, by_lr in sorted(groups.items(), key=lambda item: natural(item[0])):
            xs, ys, es, dx, dy = [], [], [], [], []
            for lr in sorted(by_lr):
                ok = [num(r["final_val_loss"]) for r in by_lr[lr]
                      if r["diverged"] == "0" and math.isfinite(num(r["final_val_loss"]))]
                if ok:
                    xs.append(lr), ys.append(np.mean(ok)), es.append(np.std(ok, ddof=1) if len(ok) > 1 else 0)
                if len(ok) < len(by_lr[lr]):
                    dx.append(lr), dy.append(np.mean([num(r["initial_loss"]) for r in by_lr[lr]]))
            st = style(first_of[k])
            ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=k, **st)
            if dx:
                ax.scatter(dx, dy, marker="x", s=60, color=st["color"], zorder=5)
        finish(fig, ax, os.path.join(plots, "loss_vs_lr.png"),
               "Final validation loss vs learning rate (× = diverged, drawn at the initial loss)",
               "peak learning rate", "final validation loss", log="x")
    figures.append(("loss_vs_lr.png", 1, loss_vs_lr))

    # 2. The limits the report judges runs by (sweep.json's schema: every run column with a limit,
    # tapegrad's — the attention-logit blow-up, the log Z drift of Wortsman et al. 2023 — and any a
    # program registered): each vs lr, median over seeds, a panel per column, the limit dotted.
    # Runs recorded before a column existed have none; a column no run measured gets no panel.
    judged = [j for j in schema.judging() if any(math.isfinite(num(r.get(j[0]))) for r in runs)]

    def limits_vs_lr():
        fig, axes = plt.subplots(1, len(judged), figsize=(6.5 * len(judged), 4.5), squeeze=False)
        for ax, (name, heading, limits) in zip(axes[0], judged):
            values = []
            for k, by_lr in sorted(groups.items(), key=lambda item: natural(item[0])):
                pts = [(lr, float(np.median(v))) for lr in sorted(by_lr)
                       if (v := [num(r[name]) for r in by_lr[lr] if math.isfinite(num(r.get(name)))])]
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=k, **style(first_of[k]))
                    values += [p[1] for p in pts]
            for limit, word in limits:
                ax.axhline(limit, color="black", linestyle=":", linewidth=1, label=f"limit: {word} {limit:g} is flagged")
                values.append(limit)
            log_scale(ax, "x")
            if min(values) > 0 and max(values) > 100 * min(values):
                log_scale(ax, "y")
            ax.set_xlabel("peak learning rate")
            ax.set_ylabel(name)
            ax.set_title(heading.replace("$", r"\$"))  # a registered heading is text, not mathtext
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        fig.suptitle("The limits runs are judged by: each judging column vs learning rate (median over seeds)")
        fig.tight_layout()
        save(fig, os.path.join(plots, "limits_vs_lr.png"), dpi=120)
    if judged:
        figures.append(("limits_vs_lr.png", len(judged), limits_vs_lr))
    top = lrs[-1]
    at_top = defaultdict(list)
    for c in curves:
        if abs(num(c["lr"]) - top) <= 1e-12 * top and math.isfinite(num(c.get("log_z_mean"))):
            at_top[c["run_id"]].append(c)

    def per_step_at_top(column, name, title, ylabel):
        """A curve column per step for every run at the top lr, one colour per configuration."""
        def draw():
            fig, ax = plt.subplots(figsize=(7, 4.5))
            labelled = set()
            first_seed = min(rows[0]["seed"] for rows in at_top.values())
            for run_id, rows in sorted(at_top.items()):
                k = group_key(rows[0])
                ax.plot([int(c["step"]) for c in rows], [num(c.get(column)) for c in rows],
                        label=None if k in labelled else k, alpha=0.85 if rows[0]["seed"] == first_seed else 0.4,
                        **style(rows[0]))
                labelled.add(k)
            finish(fig, ax, os.path.join(plots, name), f"{title} per step at lr {top:g} (every seed)", "step", ylabel)
        if at_top and any(math.isfinite(num(c.get(column))) for rows in at_top.values() for c in rows):
            figures.append((name, 1, draw))

    per_step_at_top("log_z_mean", "log_z.png", "log Z of the LM head", "mean log Z over the batch's tokens")
    per_step_at_top("output_logit_mean", "output_logit.png", "mean output logit", "mean LM-head logit over the batch")

    # Per-step curves at the reference lr.
    by_run = defaultdict(list)
    for c in curves:
        if abs(num(c["lr"]) - ref_lr) <= 1e-12 * ref_lr:
            by_run[c["run_id"]].append(c)
    if not by_run:
        print(f"plot_lab.py: no curves at lr {ref_lr}", file=sys.stderr)
        return draw(figures)
    seeds = sorted({c[0]["seed"] for c in by_run.values()})

    def per_step_plot(name, title, ylabel, value, log=None):
        def plot():
            fig, ax = plt.subplots(figsize=(7, 4.5))
            labelled = set()
            for run_id, rows in sorted(by_run.items()):
                r0 = rows[0]
                k = group_key(r0)
                steps = [int(c["step"]) for c in rows]
                ax.plot(steps, value(rows), label=None if k in labelled else k, alpha=0.85 if r0["seed"] == seeds[0] else 0.4,
                        **style(r0))
                labelled.add(k)
            finish(fig, ax, os.path.join(plots, name), title, "step", ylabel, log=log)

        figures.append((name, 1, plot))

    per_step_plot("loss_curves.png", f"Training loss at lr {ref_lr:g} (EMA 0.1; every seed)", "training loss",
                  lambda rows: ema([num(c["loss"]) for c in rows]))

    def attention_logit(rows):
        out = []
        for c in rows:
            vals = [num(c[k]) for k in c if k.startswith("attention_logit_") and c[k] not in ("", None)]
            out.append(max(vals) if vals else math.nan)
        return out

    per_step_plot("attention_logit.png", f"Largest attention logit <q,k>/sqrt(HS) over layers, lr {ref_lr:g}",
                  "max attention logit", attention_logit)
    per_step_plot("grad_norm.png", f"Global gradient norm (before clipping), lr {ref_lr:g}", "gradient norm",
                  lambda rows: ema([num(c["grad_norm"]) for c in rows], 0.2), log="y")

    # Edge of stability (--sharpness-every), one column per lr: above, the sharpness the optimizer
    # depends on over its threshold (preconditioned under AdamW against 38/eta, plain under SGD
    # against 2/eta; 1 is the edge), dotted the curvature the step itself meets over 2/eta — the
    # batch sharpness where measured, else (plain SGD) g'Hg/g'g of the measured loss; below, the
    # training loss, which under full-batch training keeps falling, non-monotonically.
    def sharpness():
        def edge(c):
            pre, pre_t = num(c["precond_sharpness"]), num(c["precond_threshold"])
            plain, plain_t = num(c["sharpness"]), num(c["sharpness_threshold"])
            return pre / pre_t if not math.isnan(pre) else plain / plain_t

        def step_edge(c):
            batch = num(c.get("batch_sharpness"))
            if math.isfinite(batch):
                return batch * num(c["lr_now"]) / 2, "batch sharpness"
            if math.isnan(num(c["precond_sharpness"])):
                return num(c.get("step_curvature")) * num(c["lr_now"]) / 2, "curvature along the step"
            return math.nan, ""

        runs_at = defaultdict(lambda: defaultdict(list))
        for c in curves:
            runs_at[num(c["lr"])][c["run_id"]].append(c)
        fig, axes = plt.subplots(2, len(lrs), figsize=(4.6 * len(lrs), 7), squeeze=False, sharex="col")
        first_seed = min(r["seed"] for r in runs)
        for col, lr in enumerate(lrs):
            top, bottom = axes[0][col], axes[1][col]
            labelled = set()
            for run_id, rows in sorted(runs_at[lr].items()):
                r0 = rows[0]
                k = group_key(r0)
                alpha = 0.85 if r0["seed"] == first_seed else 0.35
                pts = [(int(c["step"]), edge(c)) for c in rows if math.isfinite(edge(c))]
                if pts:
                    top.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=2,
                             label=None if k in labelled else k, alpha=alpha, **style(r0))
                bpts = [(int(c["step"]),) + step_edge(c) for c in rows if math.isfinite(step_edge(c)[0])]
                if bpts:
                    st = dict(style(r0), linestyle=":")
                    what = bpts[0][2]
                    top.plot([p[0] for p in bpts], [p[1] for p in bpts], marker="x", markersize=3,
                             label=None if (k, what) in labelled else f"{k} {what}", alpha=alpha, **st)
                    labelled.add((k, what))
                bottom.plot([int(c["step"]) for c in rows], [num(c["loss"]) for c in rows], alpha=alpha, **style(r0))
                labelled.add(k)
            starts = [num(rows[0]["loss"]) for rows in runs_at[lr].values() if math.isfinite(num(rows[0]["loss"]))]
            if starts:  # a diverged run's loss would flatten every other curve
                bottom.set_ylim(0, 1.15 * max(starts))
            top.axhline(1.0, color="black", linestyle="--", linewidth=1)
            log_scale(top, "y")
            top.set_title(f"lr {lr:g}")
            top.grid(alpha=0.3)
            bottom.set_xlabel("step")
            bottom.grid(alpha=0.3)
            if col == 0:
                top.set_ylabel("sharpness / threshold (2/lr; 38/lr for Adam)")
                bottom.set_ylabel("training loss")
                top.legend(fontsize=7)
        fig.suptitle("Edge of stability: sharpness over its threshold (dashed line: the edge), and the loss")
        fig.tight_layout()
        save(fig, os.path.join(plots, "sharpness.png"), dpi=110)

    if "sharpness" in curves[0]:
        figures.append(("sharpness.png", 2 * len(lrs), sharpness))

    # Scale drift: one panel per norm/placement, one line per layer, first seed.
    keys = sorted({group_key(rows[0]) for rows in by_run.values()})

    def residual_rms():
        cols = min(4, len(keys))
        nrows = (len(keys) + cols - 1) // cols
        fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 4.2 * nrows), sharey=True, squeeze=False)
        for ax in axes.flat[len(keys):]:
            ax.set_visible(False)
        for ax, k in zip(axes.flat, keys):
            rows = next(rows for rows in by_run.values()
                        if group_key(rows[0]) == k and rows[0]["seed"] == seeds[0])
            layers = int(rows[0]["layers"])
            steps = [int(c["step"]) for c in rows]
            cmap = plt.get_cmap("viridis")
            for i in range(layers):
                color = cmap(i / max(1, layers - 1))
                ax.plot(steps, [num(c[f"residual_rms_{i}"]) for c in rows], color=color, label=f"block {i} input")
                ax.plot(steps, [num(c[f"norm_out_rms_{i}"]) for c in rows], color=color, linestyle=":", alpha=0.8)
            ax.plot(steps, [num(c["final_residual_rms"]) for c in rows], color="black", label="after last block")
            ax.set_title(k)
            ax.set_xlabel("step")
            log_scale(ax, "y")
            ax.grid(alpha=0.3)
        for row in axes:
            row[0].set_ylabel("RMS (solid: residual\nstream; dotted: attention input)")
        axes.flat[len(keys) - 1].legend(fontsize=8)
        fig.suptitle(f"Scale drift at lr {ref_lr:g}, seed {seeds[0]}")
        fig.tight_layout()
        save(fig, os.path.join(plots, "residual_rms.png"), dpi=120)

    figures.append(("residual_rms.png", len(keys), residual_rms))
    status = draw(figures)
    try:
        write_report_html(args.out, runs, curves, group_key, ref_lr, judged)
    except Exception:  # the PNG figures stand without it: name the failure, keep the status
        print("plot_lab.py: report.html failed:\n" + traceback.format_exc(), file=sys.stderr)
    if status == 0:
        print(f"plot_lab.py: plots written to {plots}", file=sys.stderr)
    return status


if __name__ == "__main__":
    # `plot_lab.py --args-on-stdin`: matplotlib is imported above, then the arguments are awaited
    # (compare_norms starts the script so while its last runs train).
    argv = args_on_stdin() if sys.argv[1:] == ["--args-on-stdin"] else sys.argv[1:]
    status = 0 if argv is None else main(argv)
    sys.stdout.flush(), sys.stderr.flush()
    os._exit(status)  # every figure is written and closed: skip matplotlib's and numpy's teardown (~0.2 s)
