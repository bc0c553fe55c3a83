"""tapegrad.lab: the norm-stability lab from Python.

    result = tapegrad.lab.sweep("runs/py", axes={"norm": ["layernorm", "rmsnorm"], "lr": [1e-3, 1e-2]},
                                steps=100, seed=1)
    result.records        # one dict per run (the columns of runs.csv)
    result.dataframe()    # the same as a pandas DataFrame, when pandas is installed
    result.curves()       # every step of every run (curves.csv), records or a DataFrame
    result.report         # report.md's text (result.report_path: the file); plots in result.out/plots
    tapegrad.lab.schema() # what each column is: type, unit, how a run's steps are summarised, meaning
    tapegrad.lab.register_run_column("peak_grad_norm", "max", ["grad_norm"], flag_above=50, flag_name="...")
                          # a measured quantity (and judgement) of your own in every sweep after

Settings not given take the lab's defaults (compare_norms'); axes not given too (every registered
norm, five learning rates, two seeds) — give an axis one value to hold it. The sweep's folder is
resumable: the same call continues it. Values the folder's grid lacks are refused, naming them,
unless grow=True adds them as axes (compare_norms grows on any new value). Every swept setting is
a key of each record (result.records[0]["dim"]).
"""
import csv
import io
import math
import os
import subprocess
import sys
from collections.abc import Mapping

from ._tapegrad import _lab


def schema():
    """The lab's record schema (lab/records.h), as each sweep folder's sweep.json holds it: {"runs":
    [{name, type, unit, summary, meaning, flag_above/flag_below, flag_name, flag_why}], "curves": [{name, unit, meaning,
    per_layer}], "renamed": {old column: today's}}."""
    return _lab.records_schema()


def register_run_column(name, fold, of, unit="", summary="", meaning="", flag_above=None, flag_below=None,
                        flag_name="", flag_why=""):
    """Adds a measured quantity to every sweep from now on (this process): a run column `name`
    that is the max, min or last (`fold`) of the curve columns `of` (a name or a list of names)
    over a run's steps (schema() names them; a per-layer column by its name, over every layer). With flag_above / flag_below it
    is a judgement too: a run beyond the limit (and not diverged) is not clean, its learning rate
    does not count as trained, and report.md counts and lists such runs under `flag_name`, saying
    `flag_why`; the plots draw it against the learning rate with its limit.

        tapegrad.lab.register_run_column("peak_grad_norm", "max", ["grad_norm"], flag_above=50,
                                         flag_name="gradient norm > 50", flag_why="...")
    """
    of = [of] if isinstance(of, str) else list(of)  # one curve column may be given by its name alone
    for limit, key in ((flag_above, "flag_above"), (flag_below, "flag_below")):
        if isinstance(limit, bool):  # True is not a limit of 1
            raise TypeError(f"register_run_column {name!r}: {key} must be a number, got {limit!r}")
    _lab.register_run_column(name, fold, of, unit, summary, meaning, flag_above, flag_below, flag_name, flag_why)


def _number(text):
    if text == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if text in ("true", "false"):
        return text == "true"
    return text


def _rows(text_rows, columns):
    out = []
    for row in csv.reader(io.StringIO("\n".join(text_rows))):
        out.append({c: _number(v) for c, v in zip(columns, row)})
    return out


def _pandas():
    try:
        import pandas
    except ImportError as e:  # optional: the records and curves work without it
        raise ImportError("a DataFrame needs pandas (Debian: apt-get install python3-pandas); "
                          "result.records and result.curves() give the same rows as dicts") from e
    return pandas


class SweepResult:
    def __init__(self, sweep, report, plots_note):
        self.out = sweep.out
        self.grid = sweep.grid
        self.reference_lr = sweep.reference_lr
        self.records = _rows(sweep.rows, list(_lab.run_columns()))
        for record, swept in zip(self.records, sweep.swept_settings):  # every swept setting its own key
            record.update({k: _number(v) for k, v in swept.items()})
        self.report_path = report
        with open(report, encoding="utf-8") as f:
            self.report = f.read()  # report.md's text (report_path names the file)
        self.plots_note = plots_note
        self.summary = sweep.console_summary()
        self.timing = sweep.timing  # seconds by part (lab/timing.h); step_share: pure steps / wall

    def dataframe(self):
        return _pandas().DataFrame(self.records)

    def curves(self, as_dataframe=False):
        path = os.path.join(self.out, "curves.csv")
        if as_dataframe:
            return _pandas().read_csv(path)
        with open(path, newline="", encoding="utf-8") as f:
            return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(f)]

    def __repr__(self):
        return f"SweepResult({self.out!r}, {len(self.records)} runs: {self.grid})"

    def _repr_html_(self):
        """A notebook's view: the summary, every run's row and the plots (embedded, so the saved
        notebook shows them without the folder)."""
        import base64
        import html
        columns = ["run_id", "final_val_loss", "min_val_loss", "diverged", "peak_residual_rms", "peak_attention_logit",
                   "step_ms"]
        head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)

        def cell(v):
            return f"{v:.4g}" if isinstance(v, float) else html.escape(str(v))
        rows = "".join("<tr>" + "".join(f"<td>{cell(r.get(c, ''))}</td>" for c in columns) + "</tr>"
                       for r in self.records)
        plots = os.path.join(self.out, "plots")
        images = ""
        if os.path.isdir(plots):
            for name in sorted(os.listdir(plots)):
                if name.endswith(".png"):
                    with open(os.path.join(plots, name), "rb") as f:
                        data = base64.b64encode(f.read()).decode("ascii")
                    images += (f'<figure style="display:inline-block;margin:4px"><img style="max-width:480px" '
                               f'src="data:image/png;base64,{data}"/><figcaption>{html.escape(name)}</figcaption></figure>')
        return (f"<div><b>tapegrad.lab sweep</b> <code>{html.escape(self.out)}</code>: {len(self.records)} runs "
                f"({html.escape(str(self.grid))})<pre>{html.escape(self.summary)}</pre>"
                f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{images}"
                f"<p>report: <code>{html.escape(self.report_path)}</code></p></div>")


# plot_lab.py's exit status when the interpreter has no matplotlib (its NO_MATPLOTLIB): the script
# is its own probe.
_NO_MATPLOTLIB = 3


def _script():
    return os.path.join(os.path.dirname(__file__), "plot_lab.py")


def _start_plotter(python):
    """plot_lab.py started while the sweep's last runs train: it imports matplotlib on the core they
    leave free, then waits for its arguments on standard input (--args-on-stdin)."""
    try:
        return subprocess.Popen([python or sys.executable, _script(), "--args-on-stdin"], stdin=subprocess.PIPE)
    except OSError:
        return None


def _plot(out, reference_lr, python, started=None):
    python = python or sys.executable
    lr = repr(reference_lr) if math.isfinite(reference_lr) else "0"
    args = ["--reference-lr", lr, "--", out]
    if started is not None:
        started.communicate(b"".join(os.fsencode(a) + b"\0" for a in args))  # each ended by a NUL, as argv
        status = started.returncode
    else:
        status = subprocess.run([python, _script()] + args).returncode
    if status == _NO_MATPLOTLIB:
        return "plots skipped: no matplotlib for " + python + " (Debian: apt-get install python3-matplotlib)"
    return "" if status == 0 else "plots failed (see the messages above)"


def sweep(out, axes=None, jobs=None, plots=True, python=None, on_run=None, grow=False, **settings):
    """Trains every run of the grid not yet in `out`, then writes runs.csv, curves.csv, report.md and
    plots. axes: {setting: [values]}; settings: one value each (names as TrainConfig's).
    on_run(record, skipped, done, total) sees each run as it finishes (an exception it raises is
    printed and the sweep goes on; KeyboardInterrupt stops it, its finished runs kept, and is raised
    after). python: the plots' interpreter, checked before any run trains. A folder that holds a grid
    is continued as it is: values it lacks are refused, naming them, unless grow=True adds them
    as axes (its runs multiply)."""
    if on_run is not None and not callable(on_run):  # refused before a run trains, not printed after each
        raise TypeError(f"lab.sweep: on_run must be callable (record, skipped, done, total), got {type(on_run).__name__}")
    if axes is not None and not isinstance(axes, Mapping):
        raise TypeError(f"lab.sweep: axes is a dict of setting: [values], got {type(axes).__name__}")
    columns = list(_lab.run_columns())

    def report_run(row, skipped, done, total):
        if on_run is not None:
            on_run(_rows([row], columns)[0], skipped, done, total)

    plotter = []  # started when the first worker runs out of runs, if plots are drawn

    def start_plotting():
        if plots:
            plotter.append(_start_plotter(python))

    def draw(reference_lr):
        return _plot(out, reference_lr, python, next(iter(plotter), None))

    args = ", ".join([repr(out)] + ([f"axes={axes!r}"] if axes else []) + [f"{k}={v!r}" for k, v in settings.items()])
    # The sweep's own settings are checked by its table (lab/sweep_settings.h), as compare_norms' flags.
    own = dict(settings, plots=plots, **({} if python is None else {"python": python}))
    try:
        # The lab's one pipeline (lab/lab.h): the sweep, report.md, the plots, report.md with them.
        engine = _lab.sweep(out, dict(axes or {}), own, jobs, report_run, start_plotting, grow,
                            draw if plots else None, f"tapegrad.lab.sweep({args})")
    except BaseException:
        for p in filter(None, plotter):  # nothing sent: it exits without drawing
            p.communicate(b"")
        raise
    return SweepResult(engine, engine.report_path, engine.plot_note)
