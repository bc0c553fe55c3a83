"""The lab from Python: a sweep from a dict of axes, its records, curves, report and plots."""
import os
import subprocess
import sys

import pytest

import tapegrad as tg

AXES = {"norm": ["layernorm", "rmsnorm"], "lr": [3e-3], "seed": [1]}
SETTINGS = dict(dim=32, heads=2, layers=2, ctx=32, batch=4, steps=16, warmup=2, eval_iters=2)


def test_a_sweep_and_its_report(tmp_dir):
    seen = []
    result = tg.lab.sweep(tmp_dir, axes=AXES, jobs=1, on_run=lambda r, skipped, done, total: seen.append((r["norm"], done, total)),
                          **SETTINGS)
    assert [r["norm"] for r in result.records] == ["layernorm", "rmsnorm"]
    assert sorted(seen) == [("layernorm", 1, 2), ("rmsnorm", 2, 2)] or len(seen) == 2
    for r in result.records:
        assert r["steps"] == 16 and r["diverged"] in (0, False) and r["final_val_loss"] < r["initial_loss"]
    curves = result.curves()
    assert len(curves) == 2 * 16 and {"run_id", "step", "loss"} <= set(curves[0]) | {"run_id"}
    with open(result.report_path, encoding="utf-8") as f:
        report = f.read()
    assert "tapegrad.lab.sweep(" in report and "rmsnorm" in report
    assert result.report == report  # the text; report_path names the file
    assert os.path.exists(os.path.join(tmp_dir, "plots", "loss_curves.png")), result.plots_note
    t = result.timing
    assert t["trained"] == 2 and 0 < t["step_share"] <= 1 and t["eval_s"] > 0 and t["report_s"] > 0
    assert "## Where the time went" in report
    again = tg.lab.sweep(tmp_dir, axes=AXES, **SETTINGS)  # everything recorded: nothing trains
    assert [r["final_val_loss"] for r in again.records] == [r["final_val_loss"] for r in result.records]


def test_records_as_a_dataframe(tmp_dir):
    """The test command installs pandas (python3-pandas), so dataframe() is tested, not skipped."""
    import pandas as pd

    result = tg.lab.sweep(tmp_dir, axes={"norm": ["none"], "lr": [3e-3], "seed": [1]}, plots=False, **SETTINGS)
    df = result.dataframe()
    assert isinstance(df, pd.DataFrame) and list(df["norm"]) == ["none"]
    assert len(result.curves(as_dataframe=True)) == len(result.curves())


def test_an_axis_is_any_list_of_values_numpys_among_them(tmp_dir):
    import numpy as np
    result = tg.lab.sweep(tmp_dir, axes={"norm": ("none",), "lr": np.logspace(-3, -2, 2, dtype=np.float32),
                                         "seed": range(1, 3)}, plots=False, **SETTINGS)
    assert sorted((r["lr"], r["seed"]) for r in result.records) == [(1e-3, 1), (1e-3, 2), (1e-2, 1), (1e-2, 2)]


def test_a_callback_or_axes_of_the_wrong_kind_is_refused_before_any_run_trains(tmp_dir):
    with pytest.raises(TypeError, match="lab.sweep: on_run must be callable .* got str"):
        tg.lab.sweep(tmp_dir, axes=AXES, on_run="print", **SETTINGS)
    with pytest.raises(TypeError, match=r"lab.sweep: axes is a dict of setting: \[values\], got list"):
        tg.lab.sweep(tmp_dir, axes=[("norm", ["none"])], **SETTINGS)
    assert not os.path.exists(os.path.join(tmp_dir, "runs.csv"))
    t = tg.lm.Trainer(tg.lm.TrainConfig(layers=1, heads=2, dim=16, ctx=8, batch=2, steps=4, warmup=0))
    with pytest.raises(TypeError, match="Trainer.fit: on_step must be callable .* got list"):
        t.fit(on_step=[], progress=False)
    assert t.step == 0


def test_a_bad_axis_is_an_error_naming_it(tmp_dir):
    with pytest.raises(tg.Error, match="norm"):
        tg.lab.sweep(tmp_dir, axes={"norm": ["batchnorm"]}, **SETTINGS)
    with pytest.raises(tg.SettingError, match="no setting 'no_such_setting'"):
        tg.lab.sweep(tmp_dir, axes={"no_such_setting": [1, 2]}, **SETTINGS)
    with pytest.raises(tg.Error, match="eval_iters cannot be an axis"):
        tg.lab.sweep(tmp_dir, axes={"eval_iters": [1, 2]}, **{k: v for k, v in SETTINGS.items() if k != "eval_iters"})


def test_every_plot_is_drawn_and_captioned(tmp_dir):
    """lab/plot_lab.py (shipped in the package) draws each plot the report captions, from a
    sweep that has the data for all of them: two learning rates, two norms, sharpness probes."""
    result = tg.lab.sweep(tmp_dir, axes={"norm": ["layernorm", "rmsnorm"], "lr": [1e-3, 3e-3], "seed": [1]},
                          jobs=1, sharpness_every=8, sharpness_iters=4, **SETTINGS)
    with open(result.report_path, encoding="utf-8") as f:
        report = f.read()
    names = ["loss_vs_lr", "loss_curves", "residual_rms", "attention_logit", "grad_norm", "limits_vs_lr", "log_z",
             "sharpness"]
    for name in names:
        path = os.path.join(tmp_dir, "plots", name + ".png")
        assert os.path.exists(path), (name, result.plots_note)
        with open(path, "rb") as f:
            head = f.read(8)
        assert head == b"\x89PNG\r\n\x1a\n" and os.path.getsize(path) > 10_000, name  # a drawn figure, not a stub
        assert f"plots/{name}.png" in report, name  # and the report shows it


def test_without_matplotlib_the_plots_are_skipped_and_said_so(tmp_dir):
    """plot_lab.py is its own probe: under an interpreter whose matplotlib cannot import it exits
    with NO_MATPLOTLIB, printing nothing, and the sweep notes the plots as skipped, naming it."""
    hidden = os.path.join(tmp_dir, "hidden")
    os.makedirs(os.path.join(hidden, "matplotlib"))
    with open(os.path.join(hidden, "matplotlib", "__init__.py"), "w") as f:
        f.write("raise ImportError('matplotlib hidden by the test')\n")
    python = os.path.join(tmp_dir, "python_without_matplotlib")
    with open(python, "w") as f:
        f.write(f"#!/bin/sh\nPYTHONPATH={hidden} exec {sys.executable} \"$@\"\n")
    os.chmod(python, 0o755)
    script = os.path.join(os.path.dirname(tg.lab.__file__), "plot_lab.py")
    run = subprocess.run([python, script, "--", tmp_dir], capture_output=True, text=True)
    assert (run.returncode, run.stdout, run.stderr) == (3, "", "")
    out = os.path.join(tmp_dir, "sweep")
    result = tg.lab.sweep(out, axes={"norm": ["none"], "lr": [3e-3], "seed": [1]}, python=python, **SETTINGS)
    assert result.plots_note == f"plots skipped: no matplotlib for {python} (Debian: apt-get install python3-matplotlib)"
    assert not os.path.exists(os.path.join(out, "plots", "loss_curves.png"))


def test_the_plots_interpreter_starts_while_the_last_run_trains(tmp_dir):
    """With two workers the plot script is started once, when the first worker runs out of runs,
    and handed its arguments after the sweep (--args-on-stdin); the plots are the same files."""
    calls = os.path.join(tmp_dir, "calls")
    python = os.path.join(tmp_dir, "logged_python")
    with open(python, "w") as f:
        f.write(f"#!/bin/sh\necho \"$*\" >> {calls}\nexec {sys.executable} \"$@\"\n")
    os.chmod(python, 0o755)
    out = os.path.join(tmp_dir, "sweep")
    result = tg.lab.sweep(out, axes=AXES, jobs=2, python=python, **SETTINGS)
    with open(calls, encoding="utf-8") as f:
        lines = f.read().splitlines()
    assert len(lines) == 1 and lines[0].endswith("plot_lab.py --args-on-stdin"), lines
    assert result.plots_note == "" and os.path.exists(os.path.join(out, "plots", "loss_curves.png"))


def test_the_record_schema_is_the_folders(tmp_dir):
    """tapegrad.lab.schema() explains every column of runs.csv, and a sweep folder's sweep.json holds
    the same schema, which the plots read (the log Z floor, the columns' former names)."""
    import json

    schema = tg.lab.schema()
    columns = list(tg.lab._lab.run_columns())  # run_id, the run identity, the schema's columns, settings
    assert [c["name"] for c in schema["runs"]] == columns[len(columns) - 1 - len(schema["runs"]):-1]
    assert all(c["meaning"] and c["summary"] and c["type"] in ("int", "real", "bool", "text") for c in schema["runs"])
    floor = next(c for c in schema["runs"] if c["name"] == "min_log_z_mean")["flag_below"]
    assert floor == -10
    tg.lab.sweep(tmp_dir, axes={"norm": ["none"], "lr": [3e-3], "seed": [1]}, plots=False, **SETTINGS)
    with open(os.path.join(tmp_dir, "sweep.json"), encoding="utf-8") as f:
        assert json.load(f)["schema"] == schema


# The recipe of docs/extending.md ("A lab measurement"), followed as a user would, in a process of
# its own (a registered column stays for the rest of the process).
RECIPE = """
import sys
import tapegrad as tg

out = sys.argv[1]
# A measured quantity and its judgement: each run's largest gradient norm, flagged past 0.5.
tg.lab.register_run_column("peak_grad_norm", "max", ["grad_norm"], meaning="the largest global gradient norm",
                           flag_above=0.5, flag_name="gradient norm > 0.5",
                           flag_why="a limit of this test, low enough to flag every run")
result = tg.lab.sweep(out, axes={"norm": ["layernorm", "rmsnorm"], "lr": [1e-3, 3e-3], "seed": [1]}, jobs=1,
                      dim=32, heads=2, layers=2, ctx=32, batch=4, steps=16, warmup=2, eval_iters=2)
for r in result.records:
    print(r["run_id"], r["peak_grad_norm"])
print("note:", result.plots_note)
"""


def test_a_registered_measurement_reaches_runs_csv_the_report_and_the_plots(tmp_dir):
    out = os.path.join(tmp_dir, "sweep")
    run = subprocess.run([sys.executable, "-c", RECIPE, out], capture_output=True, text=True, env=os.environ)
    assert run.returncode == 0, run.stderr
    values = [float(line.split()[1]) for line in run.stdout.splitlines() if not line.startswith("note:")]
    assert len(values) == 4 and all(v > 0.5 for v in values), run.stdout  # measured, and past the limit
    assert run.stdout.splitlines()[-1] == "note: ", run.stdout  # the plots were drawn
    with open(os.path.join(out, "runs.csv"), encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split(",")
    assert header[-2:] == ["peak_grad_norm", "settings"]
    with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
        report = f.read()
    assert "| gradient norm > 0.5 |" in report  # counted per configuration
    assert "**gradient norm > 0.5** (`peak_grad_norm` above 0.5): a limit of this test" in report
    assert "(flagged) |" in report  # and each flagged run listed
    assert "largest lr that trained none" in report or "| none |" in report  # flagged runs are not clean
    png = os.path.join(out, "plots", "limits_vs_lr.png")
    assert os.path.getsize(png) > 10_000
    with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
        assert "peak_grad_norm of each run vs learning rate" in f.read()
    # A process that did not register it refuses the folder's runs.csv, naming the column and why.
    with pytest.raises(tg.Error, match="unknown column 'peak_grad_norm'.*a column a program registered"):
        tg.lab.sweep(out, axes={"norm": ["layernorm", "rmsnorm"], "lr": [1e-3, 3e-3], "seed": [1]}, jobs=1,
                     dim=32, heads=2, layers=2, ctx=32, batch=4, steps=16, warmup=2, eval_iters=2)


def test_a_measurement_registered_wrongly_is_an_error_naming_it():
    """Each fault names the column and what is wrong; none of them registers anything."""
    before = list(tg.lab._lab.run_columns())
    with pytest.raises(tg.Error, match="fold 'avg' is not one of max, min, last"):
        tg.lab.register_run_column("peak_a", "avg", ["loss"])
    with pytest.raises(tg.Error, match="'../x' is not a column name"):
        tg.lab.register_run_column("../x", "max", ["loss"])
    with pytest.raises(tg.Error, match="it folds 'no_such', which is not a curve column"):
        tg.lab.register_run_column("peak_b", "max", ["no_such"])
    with pytest.raises(tg.Error, match="'final_val_loss' is already a run column"):
        tg.lab.register_run_column("final_val_loss", "min", ["loss"])
    with pytest.raises(tg.Error, match="flag_above must be finite"):
        tg.lab.register_run_column("peak_c", "max", ["loss"], flag_above=float("nan"), flag_name="c")
    with pytest.raises(tg.Error, match="its flag needs a name"):
        tg.lab.register_run_column("peak_d", "max", ["loss"], flag_above=1.0)
    with pytest.raises(tg.Error, match="it folds 'no_such', which"):  # one column given as a string
        tg.lab.register_run_column("peak_e", "max", "no_such")
    with pytest.raises(TypeError):
        tg.lab.register_run_column("peak_f", "max", 5)
    with pytest.raises(TypeError, match="flag_above must be a number, got True"):
        tg.lab.register_run_column("peak_g", "max", "loss", flag_above=True, flag_name="g")
    with pytest.raises(tg.Error, match="its flag name must be one line of at most 80 bytes without '[|]'"):
        tg.lab.register_run_column("peak_h", "max", "loss", flag_above=1.0, flag_name="a | b\n## evil")
    with pytest.raises(tg.Error, match="its flag's why must be one line of at most 1000 bytes"):
        tg.lab.register_run_column("peak_i", "max", "loss", flag_above=1.0, flag_name="i", flag_why="x" * 2000)
    assert list(tg.lab._lab.run_columns()) == before


def test_registering_while_a_sweep_runs_is_an_error_not_a_crash(tmp_dir):
    """The sweep's workers fold every step by the record schema: a registration from a callback
    (the main thread or a worker's) while it runs is refused, saying why, and the sweep finishes."""
    refused = []

    def on_run(record, skipped, done, total):
        try:
            tg.lab.register_run_column(f"peak_loss_{done}", "max", "loss")
        except tg.Error as e:
            refused.append(str(e))

    result = tg.lab.sweep(tmp_dir, axes={"norm": ["layernorm", "none"], "lr": [3e-3], "seed": [1]}, jobs=2,
                          plots=False, on_run=on_run, **SETTINGS)
    assert len(result.records) == 2 and len(refused) == 2
    assert all("a sweep is running in this process; register before it starts" in m for m in refused)
    assert "peak_loss_1" not in tg.lab._lab.run_columns()


def test_a_plots_interpreter_that_cannot_run_is_named_before_any_run_trains(tmp_dir):
    seen = []
    for python, fault in [("/nonexistent/python3", "no such file"), ("no-such-python-here", "not found on PATH"),
                          (__file__, "not an executable file")]:
        with pytest.raises(tg.SettingError, match=f"lab.sweep: python '{python}': {fault}"):
            tg.lab.sweep(tmp_dir, axes=AXES, python=python, on_run=lambda *a: seen.append(a), **SETTINGS)
    assert seen == [] and not os.path.exists(os.path.join(tmp_dir, "runs.csv"))
