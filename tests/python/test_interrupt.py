"""Ctrl-C, as a user presses it: SIGINT to a real Python process running tapegrad.lab.sweep or
Trainer.fit stops it within a step with a KeyboardInterrupt (no 'Exception ignored', no finished
sweep), and the sweep's folder resumes where it stopped."""
import os
import signal
import subprocess
import sys
import time

import tapegrad

PKG = os.path.dirname(os.path.dirname(os.path.abspath(tapegrad.__file__)))

SWEEP = """
import sys, tapegrad as tg
def on_run(record, skipped, done, total):
    print("RUN", record["run_id"], "skipped" if skipped else "trained", flush=True)
r = tg.lab.sweep(sys.argv[1], axes={"norm": ["layernorm", "none"], "lr": [1e-3, 3e-3], "seed": [1]}, plots=False,
                 on_run=on_run, layers=1, heads=2, dim=16, ctx=16, batch=2, steps=%d, warmup=2, eval_iters=1, threads=1, jobs=1)
print("FINISHED", len(r.records), flush=True)
"""


def start(code, *args):
    env = dict(os.environ, PYTHONPATH=PKG)
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def test_ctrl_c_stops_a_sweep_within_a_run_and_the_folder_resumes(tmp_dir):
    out = os.path.join(tmp_dir, "sweep")
    p = start(SWEEP % 30000, out)  # a few seconds a run
    first = p.stdout.readline()
    assert first.startswith("RUN "), first + p.stderr.read()
    time.sleep(0.3)  # inside the second run
    p.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    try:
        rest, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        raise AssertionError("the sweep went on after Ctrl-C")
    assert time.monotonic() - t0 < 10, "Ctrl-C took more than a few steps"
    assert p.returncode != 0
    assert "KeyboardInterrupt" in err and "Exception ignored" not in err, err
    assert "FINISHED" not in rest
    # The same call again resumes: the run finished before Ctrl-C is skipped, the others train.
    done = subprocess.run([sys.executable, "-c", SWEEP % 30000, out], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=PKG), timeout=300)
    assert done.returncode == 0, done.stderr
    assert first.split()[1] + " skipped" in done.stdout
    assert done.stdout.count(" trained") == 3 and "FINISHED 4" in done.stdout, done.stdout


def test_ctrl_c_stops_fit_within_a_step():
    code = """
import tapegrad as tg
t = tg.lm.Trainer(tg.lm.TrainConfig(layers=1, heads=2, dim=16, ctx=16, batch=2, steps=10**8, warmup=2, threads=1))
print("READY", flush=True)
t.fit(progress=False)
print("FINISHED", flush=True)
"""
    p = start(code)
    assert p.stdout.readline().startswith("READY")
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    rest, err = p.communicate(timeout=30)
    assert p.returncode != 0 and "KeyboardInterrupt" in err and "FINISHED" not in rest, err


def test_ctrl_c_inside_python_code_the_engine_calls_stays_a_keyboard_interrupt():
    # Ctrl-C lands in whatever Python runs at that moment, often a Function's backward or a Python
    # norm's forward called from C++: it leaves as KeyboardInterrupt (and SystemExit as itself),
    # not as a tapegrad.Error "raised KeyboardInterrupt" the user's handler would not see.
    import numpy as np
    import pytest
    tg = tapegrad

    class Stop(tg.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2.0

        @staticmethod
        def backward(ctx, g):
            raise KeyboardInterrupt

    tape = tg.Tape()
    p = tg.Parameter("p", np.ones((2, 3), np.float32))
    with pytest.raises(KeyboardInterrupt):
        Stop.apply(tape.param(p)).sum().backward()
    tape.clear()  # the tape is whole: the next step runs
    (tape.param(p) * 3.0).sum().backward()
    np.testing.assert_array_equal(p.grad, 3.0)

    # A norm registered in a process of its own: a registration lasts as long as the process, and
    # other tests walk every registered norm.
    code = """
import tapegrad as tg
calls = [0]
class InterruptedNorm(tg.nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
    def forward(self, x):
        calls[0] += 1
        if calls[0] == 7:
            raise KeyboardInterrupt
        return x * 1.0
tg.nn.register_norm("interrupted_norm", InterruptedNorm)
t = tg.lm.Trainer(tg.lm.TrainConfig(norm="interrupted_norm", layers=1, heads=2, dim=16, ctx=16, batch=2,
                                    steps=50, warmup=2, threads=2))
try:
    t.fit(progress=False)
except KeyboardInterrupt:
    print("KeyboardInterrupt at step", t.step)
InterruptedNorm.forward = lambda self, x: 1 / 0
try:
    t.train_step()
except tg.Error as e:
    print(e)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=PKG))
    assert "KeyboardInterrupt at step " in out.stdout, out.stdout + out.stderr
    assert int(out.stdout.split("at step ")[1].split()[0]) < 50
    assert "norm 'interrupted_norm': forward raised ZeroDivisionError" in out.stdout, out.stdout + out.stderr
