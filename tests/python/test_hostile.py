"""The Python surface driven as an attacker would: hostile arguments, from several threads at once.
Every call ends in a result or a Python exception with the engine's message, never a crash of the
interpreter (a segmentation fault would end this whole suite, so each case also runs here)."""
import gc
import os
import random
import threading
import warnings

import numpy as np
import pytest

import tapegrad as tg

SMALL = dict(layers=1, dim=16, heads=2, ctx=16, batch=2, steps=400, warmup=2, eval_every=0, eval_iters=1)


def trainer(**over):
    return tg.lm.Trainer(tg.lm.TrainConfig(**{**SMALL, **over}))


def test_backward_with_an_upstream_gradient_then_its_grads():
    tape = tg.Tape()
    w = tape.param(tg.Parameter("w", np.arange(6, dtype=np.float32).reshape(2, 3)))
    y = w * w
    up = np.full((2, 3), 0.5, np.float32)
    y.backward(up)
    np.testing.assert_allclose(w.grad, 2 * np.arange(6).reshape(2, 3) * 0.5)
    tape.clear()
    y = tape.param(tg.Parameter("v", np.ones((2, 3), np.float32))) * 2.0
    with pytest.raises(tg.Error, match=r"upstream gradient of shape \(5\) for a value of shape \(2,3\)"):
        y.backward(np.ones(5, np.float32))
    with pytest.raises(tg.Error, match=r"upstream gradient of shape \(3,2\)"):
        y.backward(np.ones((3, 2), np.float32))


def test_thread_counts_out_of_range_are_refused():
    for n in (1 << 30, 1025, 1 << 20):
        with pytest.raises(tg.Error, match="set_num_threads: n must be at most 1024"):
            tg.set_num_threads(n)
    with pytest.raises(TypeError):
        tg.set_num_threads(1 << 40)
    tg.set_num_threads(1)
    with pytest.raises(tg.SettingError, match="threads 5000 is too large"):
        tg.lm.TrainConfig(threads=5000)


def test_a_hook_may_keep_its_module_after_the_trainer_is_gone():
    t = trainer()
    kept = []
    norm = t.model.get_submodule("blocks.0.norm1")
    norm.register_forward_hook(lambda module, inputs, output: kept.append(module))
    t.train_step()
    del t, norm
    gc.collect()
    junk = [np.ones(4096) for _ in range(256)]  # reuse freed memory, if any was freed
    assert kept and "LayerNorm(16" in repr(kept[0])
    assert [n for n, _ in kept[0].named_parameters()] == ["blocks.0.norm1.weight", "blocks.0.norm1.bias"]
    assert float(kept[0].parameters()[0].value.sum()) != 0 and junk


def test_two_threads_on_one_trainer_take_turns():
    t = trainer()
    errors = []

    def train():
        try:
            for _ in range(30):
                t.train_step()
        except Exception as e:  # pragma: no cover - the failure is reported below
            errors.append(e)

    def sample():
        try:
            for i in range(30):
                t.generate("ab", tokens=8, seed=i)
                t.step, t.lr, t.config  # reads between steps
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=train), threading.Thread(target=train), threading.Thread(target=sample)]
    for x in threads:
        x.start()
    for x in threads:
        x.join()
    assert not errors, errors
    assert t.step == 60  # every step of both threads, none lost to a race


def test_a_tape_in_backward_is_refused_to_other_threads():
    tape = tg.Tape()
    w = tape.param(tg.Parameter("w", np.ones((64, 64), np.float32)))
    y = w
    for _ in range(200):
        y = (y @ w).tanh()
    loss = y.mean()
    seen = []

    def poke():
        for _ in range(2000):
            try:
                (w * 2.0).numpy()
                seen.append("ok")
            except tg.Error as e:
                assert "running backward() in another thread" in str(e)
                seen.append("refused")

    other = threading.Thread(target=poke)
    other.start()
    loss.backward()
    other.join()
    assert seen  # every call ended in a value or the refusal, none in a crash


def test_hostile_arguments_from_several_threads():
    """A few hundred hostile calls, shuffled, from four threads: each a result or an exception."""
    t = trainer()
    tape = tg.Tape()
    p = tg.Parameter("p", np.ones((3, 4), np.float32))
    calls = [
        lambda: tg.Tensor.zeros((-1, 3)),
        lambda: tg.Tensor.zeros((1 << 62,)),
        lambda: tape.constant(np.ones((2, 3))) + tape.constant(np.ones(4)),
        lambda: tape.param(p).backward(np.ones((9,), np.float32)),
        lambda: tape.param(p).reshape([5, 5]),
        lambda: tape.param(p).transpose(0, 7),
        lambda: tape.param(p).max(9, False),
        lambda: tg.cross_entropy(tape.constant(np.zeros((2, 3))), np.array([7, -1])),
        lambda: tg.set_num_threads(1 << 29),
        lambda: t.generate("x", tokens=-1),
        lambda: t.generate("x", tokens=1 << 40),
        lambda: t.generate("x", tokens=2, top_p=float("nan")),
        lambda: t.generate("\0\xff", tokens=2),
        lambda: t.decode([1 << 30, -5]),
        lambda: t.save("bad\0dir"),
        lambda: t.save(""),
        lambda: tg.lm.TrainConfig(data="x\0y"),
        lambda: tg.lm.TrainConfig(seed=-1),
        lambda: tg.lm.TrainConfig(seed=1 << 64),
        lambda: tg.lm.TrainConfig(dim=1 << 40),
        lambda: tg.lm.TrainConfig(lr=float("inf")),
        lambda: tg.lm.TrainConfig(norm=None),
        lambda: tg.lm.TrainConfig(recipe="papers", norm="dyt", placement="deepnorm"),
        lambda: tg.lm.Trainer.resume("/nonexistent\0x"),
        lambda: tg.optim.AdamW([p], lr=-1),
        lambda: t.model.get_submodule("no.such"),
        lambda: t.train_step(),
        lambda: t.evaluate(),
    ]
    rng = random.Random(1)
    order = [rng.randrange(len(calls)) for _ in range(240)]
    outcomes = {"ok": 0, "raised": 0}
    lock = threading.Lock()

    def run(part):
        for i in part:
            try:
                calls[i]()
                kind = "ok"
            except (tg.Error, ValueError, TypeError, OverflowError, AttributeError):
                kind = "raised"
            with lock:
                outcomes[kind] += 1

    threads = [threading.Thread(target=run, args=(order[k::4],)) for k in range(4)]
    for x in threads:
        x.start()
    for x in threads:
        x.join()
    assert outcomes["ok"] + outcomes["raised"] == len(order)
    assert outcomes["raised"] > 100


def test_paths_with_a_nul_byte_are_refused_naming_the_argument(tmp_dir):
    with open(os.path.join(tmp_dir, "text.txt"), "w") as f:
        f.write("hello world " * 100)
    with pytest.raises(tg.SettingError, match=r"data '.*text.txt\\0junk': a path cannot hold a NUL byte"):
        tg.lm.TrainConfig(data=os.path.join(tmp_dir, "text.txt") + "\0junk")
    t = trainer()
    with pytest.raises(tg.Error, match=r"Trainer.save dir '.*x\\0evil': a path cannot hold a NUL byte"):
        t.save(os.path.join(tmp_dir, "x") + "\0evil")
    assert not os.path.exists(os.path.join(tmp_dir, "x"))
    small = {k: v for k, v in SMALL.items() if k != "eval_every"}
    with pytest.raises(tg.Error, match=r"the sweep's folder \(out\) '.*s\\0evil'"):
        tg.lab.sweep(os.path.join(tmp_dir, "s") + "\0evil", axes={"norm": ["none"], "lr": [1e-3], "seed": [1]},
                     plots=False, **small)
    assert not os.path.exists(os.path.join(tmp_dir, "s"))


def test_a_recipe_is_applied_as_train_lm_applies_it():
    c = tg.lm.TrainConfig(recipe="dyt-paper")
    assert (c.norm, c.embed_scale, c.dyt_beta) == ("dyt", "learned", False)
    assert tg.lm.TrainConfig(recipe="dyt-paper", dyt_beta=True).dyt_beta  # a keyword given wins
    with pytest.raises(tg.SettingError, match="recipe dyt-paper is for norm dyt, got layernorm"):
        tg.lm.TrainConfig(recipe="dyt-paper", norm="layernorm")
    with pytest.raises(tg.SettingError, match="dyt-paper-transfer .* and deepnorm-paper .* both set embed-scale"):
        tg.lm.TrainConfig(recipe="papers", norm="dyt", placement="deepnorm")
    t = tg.lm.Trainer(tg.lm.TrainConfig(**{**SMALL, "recipe": "dyt-paper"}))
    assert "DyT" in repr(t.model.get_submodule("blocks.0.norm1"))


def test_contradicting_settings_warn():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        tg.lm.TrainConfig(steps=10, warmup=100)
    assert [x.category for x in w] == [tg.SettingWarning]
    assert str(w[0].message).startswith("warmup 100 is not shorter than steps 10")


def test_a_config_round_trips_through_its_dict():
    c = tg.lm.TrainConfig(seed=2**64 - 1)
    assert tg.lm.TrainConfig(**c.to_dict()).seed == 2**64 - 1


def test_a_module_used_twice_lists_its_parameters_once():
    class Twice(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = tg.nn.Linear(3, 3)
            self.b = self.a

        def forward(self, tape, x):
            return self.b(tape, self.a(tape, x))

    m = Twice()
    assert [n for n, _ in m.named_parameters()] == ["a.weight", "a.bias"]
    assert len(m.parameters()) == 2


def test_one_writer_per_folder_within_a_process(tmp_dir):
    """fit(checkpoint_dir=D) holds D as train_lm holds its --out: another trainer's save there is refused."""
    folder = os.path.join(tmp_dir, "run")
    a, b = trainer(steps=6, checkpoint_every=2), trainer(steps=6)
    inside, release, refused = threading.Event(), threading.Event(), []

    def on_step(d):
        if d["step"] == 1:
            inside.set()
            release.wait(30)

    def other():
        inside.wait(30)
        try:
            b.save(folder)
        except tg.Error as e:
            refused.append(str(e))
        release.set()

    thread = threading.Thread(target=other)
    thread.start()
    a.fit(on_step=on_step, progress=False, checkpoint_dir=folder)
    thread.join()
    assert refused and "in use by another thread of this process" in refused[0]
    b.save(folder)  # free again once the run ends


def test_a_garbage_settings_cell_is_named_not_a_traceback(tmp_dir):
    import subprocess
    import sys

    from tapegrad import lab as tglab

    out = os.path.join(tmp_dir, "s")
    small = {k: v for k, v in SMALL.items() if k != "eval_every"}
    tg.lab.sweep(out, axes={"norm": ["none"], "lr": [1e-3], "seed": [1], "dim": [16, 32]}, plots=False,
                 **{**small, "steps": 3})
    runs = os.path.join(out, "runs.csv")
    text = open(runs).read()
    assert "dim=32" in text
    open(runs, "w").write(text.replace("dim=32", "dim32"))
    done = subprocess.run([sys.executable, tglab._script(), out], capture_output=True, text=True)
    assert done.returncode != 0
    assert "its settings cell 'dim32' holds 'dim32', not key=value" in done.stderr
    assert "Traceback" not in done.stderr


def test_assigning_to_a_trainers_config_is_refused_not_ignored():
    t = trainer()
    with pytest.raises(AttributeError, match="read-only: assigning lr would change nothing"):
        t.config.lr = 0.5
    assert t.config.lr == SMALL.get("lr", 1e-3)
    c = t.config.replace(lr=0.5)  # a new config is free to change
    c.lr = 0.25
    assert c.lr == 0.25


def test_a_sweep_folder_grows_only_when_asked_and_records_name_every_swept_setting(tmp_dir):
    out = os.path.join(tmp_dir, "grow")
    small = dict(layers=1, heads=2, ctx=16, batch=2, eval_iters=1, threads=1)
    axes = {"norm": ["none"], "lr": [1e-3], "seed": [1]}
    r = tg.lab.sweep(out, axes=axes, plots=False, dim=16, steps=6, warmup=2, **small)
    assert len(r.records) == 1
    with pytest.raises(tg.SettingError, match=r"would grow: dim 32 \(it has 16\), steps 4 \(it has 6\), warmup 1 "
                                              r"\(it has 2\)\. Pass grow=True to add them as axes \(8 runs in all\)"):
        tg.lab.sweep(out, axes=axes, plots=False, dim=32, steps=4, warmup=1, **small)
    assert len(tg.lab.sweep(out, axes=axes, plots=False, dim=16, steps=6, warmup=2, **small).records) == 1  # as it was
    r = tg.lab.sweep(out, axes={**axes, "dim": [16, 32]}, plots=False, grow=True, steps=6, warmup=2, **small)
    assert sorted(rec["dim"] for rec in r.records) == [16, 32]  # its own key, the base's value included


def test_notebook_reprs_say_what_the_object_is():
    t = trainer(steps=20)
    assert repr(t).startswith("Trainer(step 0 of 20, Decoder ") and "norm=layernorm" in repr(t)
    tape = tg.Tape()
    assert repr(tape) == "tapegrad.Tape(0 nodes)"
    p = tg.Parameter("w", np.ones(3, np.float32))
    assert repr(tg.optim.AdamW([p])) == "AdamW(1 parameters, lr=0.001, 0 steps taken)"
    assert repr(tg.optim.SGD([p], lr=0.5)).startswith("SGD(1 parameters, lr=0.5")


def test_a_backward_that_computes_on_its_tape_or_clears_it_is_safe():
    """A Function's backward (or a hook) runs while the tape's backward walks its nodes: ops on the
    tape there record nothing (as torch runs backward without grad mode), and clear() is refused."""
    tape = tg.Tape()
    w = tg.Parameter("w", np.array([1.0, -2.0, 3.0], np.float32))
    action = {"do": None}

    class Probe(tg.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            action["do"]()
            return g

    def compute():
        for _ in range(200):  # each would have appended a node under the running pass
            v = tape.param(w) * 2.0
            assert not v.requires_grad
        return None

    action["do"] = compute
    (Probe.apply(tape.param(w)) * 3.0).sum().backward()
    np.testing.assert_array_equal(w.grad, [3.0, 3.0, 3.0])
    assert tape.param(w).requires_grad  # recording is back on after the pass

    tape.clear()
    action["do"] = tape.clear
    with pytest.raises(tg.Error, match=r"clear: this tape is running backward\(\)"):
        Probe.apply(tape.param(w)).sum().backward()
    tape.clear()  # after the pass
    w.zero_grad()
    action["do"] = lambda: None
    Probe.apply(tape.param(w)).sum().backward()
    np.testing.assert_array_equal(w.grad, [1.0, 1.0, 1.0])
