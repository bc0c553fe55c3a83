"""The Python API called at random with hostile arguments (api_fuzz.py, a seeded walk in a process
of its own): no call may crash the interpreter or raise what a user cannot act on — a SystemError
(an exception the bindings left set), pybind's "Unable to cast" RuntimeError, a bare KeyError or
IndexError from inside tapegrad. Each class was found this way and fixed at its root; the walk
keeps them found."""
import json
import os
import subprocess
import sys

import pytest

import tapegrad

PKG = os.path.dirname(os.path.dirname(os.path.abspath(tapegrad.__file__)))
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "api_fuzz.py")


@pytest.mark.parametrize("seed", [*range(1, 9), 20])  # 20 found the division by a 0 last dim
def test_hostile_calls_end_in_errors_a_user_can_act_on(seed):
    out = subprocess.run([sys.executable, SCRIPT, str(seed), "5000"], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=PKG))
    lines = out.stdout.splitlines()
    assert out.returncode == 0, f"the interpreter died (code {out.returncode}) at call: {lines[-1] if lines else '-'}\n{out.stderr[-2000:]}"
    assert lines and lines[-1].startswith("FORBIDDEN "), out.stderr[-2000:]
    forbidden = json.loads(lines[-1][len("FORBIDDEN "):])
    assert forbidden == [], "\n".join(forbidden)
    assert sum(1 for x in lines if x[:1].isdigit()) > 2000  # the walk made its calls
