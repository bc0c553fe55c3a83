"""A C++ norm in `import tapegrad`: a plugin (tapegrad/nn/plugin.h; tests/python/plugin/) loaded with
tg.nn.load_plugin trains by name, and a run that trained with it resumes in a new process that
loads the plugin first. The build makes the plugin (tapegrad_test_plugin); ctest names it in
TAPEGRAD_TEST_PLUGIN."""
import glob
import os
import subprocess
import sys

import numpy as np
import pytest

import tapegrad as tg


def plugin_path():
    path = os.environ.get("TAPEGRAD_TEST_PLUGIN")
    if not path:  # a build tree: build/python/tapegrad -> build/tests
        found = glob.glob(os.path.join(os.path.dirname(tg.__file__), "..", "..", "tests", "libtapegrad_test_plugin.so"))
        path = found[0] if found else ""
    if not os.path.exists(path):
        pytest.fail("the test plugin is not built (cmake --build build --target tapegrad_test_plugin)")
    return os.path.abspath(path)


def test_a_cpp_norm_from_a_plugin_trains_and_resumes_from_python(tmp_path):
    assert tg.nn.load_plugin(plugin_path()) == ["cpp-meanabs"]
    assert "cpp-meanabs" in tg.nn.norm_names()
    config = tg.lm.TrainConfig(norm="cpp-meanabs", dim=32, heads=2, layers=2, ctx=32, batch=4, steps=12, warmup=2,
                               seed=3, eval_every=0)
    t = tg.lm.Trainer(config)
    assert "blocks.0.norm1.weight" in [n for n, _ in t.model.named_parameters()]
    losses = [t.train_step().loss for _ in range(4)]
    assert losses[-1] < losses[0]
    t.save(str(tmp_path / "run"))
    rest = [t.train_step().loss for _ in range(3)]
    # A new process: without the plugin the norm is unknown (named); with it the run continues bitwise.
    code = f"""
import tapegrad as tg
try:
    tg.lm.Trainer.resume({str(tmp_path / 'run')!r})
except tg.Error as e:
    print("without:", e)
tg.nn.load_plugin({plugin_path()!r})
t = tg.lm.Trainer.resume({str(tmp_path / 'run')!r})
print("losses:", [t.train_step().loss for _ in range(3)])
"""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(tg.__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert "without:" in out.stdout and "cpp-meanabs" in out.stdout, out.stdout + out.stderr
    assert f"losses: {rest}" in out.stdout, out.stdout + out.stderr


def test_load_plugin_mistakes_name_the_file(tmp_path):
    with pytest.raises(tg.Error, match="nothing.so' is not a regular file"):
        tg.nn.load_plugin(str(tmp_path / "nothing.so"))
    (tmp_path / "text.so").write_text("not a library")
    with pytest.raises(tg.Error, match="cannot load '.*text.so'"):
        tg.nn.load_plugin(str(tmp_path / "text.so"))
    not_a_plugin = glob.glob("/usr/lib/x86_64-linux-gnu/libm.so.6") or glob.glob("/lib/*/libm.so.6")
    if not_a_plugin:
        with pytest.raises(tg.Error, match="has no tapegrad_plugin_version"):
            tg.nn.load_plugin(not_a_plugin[0])
    fifo = tmp_path / "plugin.fifo"
    os.mkfifo(fifo)  # dlopen would block on it
    with pytest.raises(tg.Error, match="is not a regular file"):
        tg.nn.load_plugin(str(fifo))
    with pytest.raises(tg.Error, match="is not a regular file"):
        tg.nn.load_plugin(str(tmp_path))
    with pytest.raises(tg.Error, match="NUL"):
        tg.nn.load_plugin("a\0b")
