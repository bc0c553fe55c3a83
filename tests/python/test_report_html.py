"""The lab's report as a web page: report.html opened in headless Chromium (Debian's
chromium-headless-shell: the test command installs it) renders every figure with no console error,
and its screenshot is not blank. The check itself is checked: a page whose script throws fails it."""
import os
import re
import subprocess

import numpy as np
import pytest

import tapegrad as tg

CHROMIUM = "/usr/bin/chromium-headless-shell"


def _chromium(page, *flags):
    return subprocess.run([CHROMIUM, "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr",
                           "--v=0", "--virtual-time-budget=10000", *flags, "file://" + str(page)],
                          capture_output=True, text=True, timeout=120)


def _console_errors(stderr):
    # Chromium logs the page's console as 'CONSOLE(line)] "message"'; errors also as 'Uncaught ...'.
    return [l for l in stderr.splitlines() if re.search(r"CONSOLE|Uncaught", l) and re.search(r"rror|Uncaught", l)]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("html") / "sweep"
    tg.lab.sweep(str(out), axes={"norm": ["layernorm", "rmsnorm"], "lr": [3e-3, 1e-2], "seed": [1]},
                 dim=16, heads=2, layers=1, ctx=16, batch=4, steps=8, warmup=1, jobs=2)
    return out / "report.html"


def test_report_html_renders_in_chromium_with_no_console_error(report, tmp_path):
    assert os.path.getsize(report) > 1_000_000  # plotly.js inside: works offline
    text = report.read_text(encoding="utf-8")
    assert "<script src=" not in text  # nothing fetched from elsewhere
    dom = _chromium(report, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert _console_errors(dom.stderr) == []
    figures = text.count('class="plotly-graph-div"')
    assert figures >= 4
    assert dom.stdout.count('class="main-svg"') >= figures  # every figure drawn by plotly
    assert "layernorm_pre_lr0.003_s1" in text and "<table>" in text  # hover names runs; the report's tables
    shot = tmp_path / "shot.png"
    r = _chromium(report, "--window-size=1200,1600", f"--screenshot={shot}")
    assert r.returncode == 0 and shot.exists()
    import matplotlib.image as mpimg
    pixels = mpimg.imread(str(shot))[..., :3]
    inked = np.mean(np.any(pixels < 0.9, axis=-1))
    assert inked > 0.02, f"screenshot nearly blank ({inked:.3%} of pixels drawn)"
    colours = len(np.unique((pixels * 255).astype(np.uint8).reshape(-1, 3), axis=0))
    assert colours > 50  # curves and markers in colour, not one flat shade


def test_the_console_check_catches_a_failing_page(report, tmp_path):
    broken = tmp_path / "broken.html"
    broken.write_text(report.read_text(encoding="utf-8").replace("<h1>Figures</h1>",
                      "<h1>Figures</h1><script>undefinedFunction()</script>", 1), encoding="utf-8")
    r = _chromium(broken, "--dump-dom")
    assert _console_errors(r.stderr), r.stderr[-1000:]
