"""Notebook habits: the progress line (in place in a terminal and a notebook, a line per evaluation
in a log), the sweep result's HTML view, and examples/python/norms.ipynb executed as a user would
(nbconvert, Debian's python3-nbconvert and python3-ipykernel: the test command installs them)."""
import io
import json
import os
import subprocess
import sys

import tapegrad as tg
from tapegrad.progress import Progress

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _steps(n, eval_every):
    for s in range(1, n + 1):
        d = {"step": s, "loss": 4.0 - s * 0.01, "lr": 1e-3, "step_ms": 10.0, "tokens_per_s": 1000.0 * (s % 3 + 1)}
        if s % eval_every == 0:
            d["val_loss"] = 3.5
        yield d


def test_progress_redraws_in_a_terminal_and_prints_evaluations_in_a_log():
    tty = io.StringIO()
    p = Progress(10, window=4, min_interval=0, stream=tty, mode="tty")
    for d in _steps(10, 5):
        p.update(d)
    text = tty.getvalue()
    assert text.count("\r") >= 10 and text.count("\n") == 2  # redrawn in place; the evaluations stay
    assert "10/10" in text and "val 3.5000" in text
    # tokens/s over the window: steps 7..10 ran at 2k, 3k, 1k, 2k tokens/s for 10 ms each -> 2.0k.
    assert "2.0k tok/s" in text.splitlines()[-1]
    log = io.StringIO()
    p = Progress(10, stream=log, mode="lines")
    for d in _steps(10, 5):
        p.update(d)
    lines = log.getvalue().splitlines()
    assert len(lines) == 2 and "\r" not in log.getvalue() and lines[1].startswith("[" + "#" * 24 + "] 10/10")


def test_fit_shows_progress_and_a_sweep_result_renders_as_html(tmp_path, capsys):
    t = tg.lm.Trainer(tg.lm.TrainConfig(dim=16, heads=2, layers=1, ctx=16, batch=4, steps=6, warmup=1, eval_every=3))
    t.fit()
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and "3/6" in out[0] and "6/6" in out[1]  # stdout is not a TTY here: a line per evaluation
    r = tg.lab.sweep(str(tmp_path / "s"), axes={"norm": ["layernorm", "rmsnorm"], "lr": [1e-2], "seed": [1]}, dim=16, heads=2, layers=1, ctx=16,
                     batch=4, steps=6, warmup=1, jobs=1)
    page = r._repr_html_()
    assert page.count("<tr>") == 1 + 2 and "layernorm" in page and "<pre>" in page
    assert page.count("data:image/png;base64,") == len([f for f in os.listdir(tmp_path / "s" / "plots") if f.endswith(".png")])


def test_the_example_notebook_runs(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(tg.__file__)) + os.pathsep + env.get("PYTHONPATH", "")
    done = tmp_path / "norms.ipynb"
    subprocess.run(["/usr/bin/python3", "-m", "nbconvert", "--to", "notebook", "--execute",
                    "--ExecutePreprocessor.timeout=900", "--output", str(done),
                    os.path.join(ROOT, "examples", "python", "norms.ipynb")],
                   check=True, env=env, cwd=str(tmp_path), capture_output=True)
    cells = [c for c in json.loads(done.read_text())["cells"] if c["cell_type"] == "code"]
    errors = [o for c in cells for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert not errors, errors
    text = lambda c: "".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                             for o in c.get("outputs", []))
    assert "Trainer(" in text(cells[0])
    assert "40/40" in text(cells[1])
    assert "val loss:" in text(cells[2])
    assert any("<img" in "".join(o.get("data", {}).get("text/html", "")) for o in cells[3]["outputs"])
    assert "#" in text(cells[4])  # the report's Markdown
