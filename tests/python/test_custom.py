"""Ops and norms written in Python: tapegrad.Function (forward and backward in numpy, checked in
float64 against finite differences) and tapegrad.nn.register_norm (a norm trained by name, saved
and resumed, its parameters the model's)."""
import os
import sys

import numpy as np
import pytest

import tapegrad as tg


class Cube(tg.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return scale * x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * ctx.scale * x ** 2 * grad, None


class Bilinear(tg.Function):
    """x @ w, its backward by hand."""
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x @ w

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        return grad @ w.T, x.T @ grad


def test_a_function_records_a_node_and_its_backward_is_gradchecked():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    r = tg.gradcheck(lambda a, b: Cube.apply(Bilinear.apply(a, b), 0.5), [x, w], name="cube(x @ w)")
    assert r.ok, r.message
    assert r.max_rel_error < 1e-6
    # float32: the values and gradients a composed twin gives.
    tape = tg.Tape()
    xv = tg.Parameter("x", x.astype(np.float32))
    y = Cube.apply(tape.param(xv), 2.0)
    np.testing.assert_allclose(y.numpy(), 2 * x.astype(np.float32) ** 3, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(xv.grad, 6 * x.astype(np.float32) ** 2, rtol=1e-5)


def test_function_mistakes_are_errors_that_name_the_function():
    def function(name, forward, backward=None):
        """A Function subclass named `name` from two plain functions."""
        return type(name, (tg.Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})

    def boom(ctx, grad):
        raise ValueError("boom")

    WrongShape = function("WrongShape", lambda ctx, x: x * 2, lambda ctx, grad: grad[:1])
    Raises = function("Raises", lambda ctx, x: x, boom)
    TwoGrads = function("TwoGrads", lambda ctx, x: x, lambda ctx, grad: (grad, grad))
    NotAnArray = function("NotAnArray", lambda ctx, x: "x")

    x = tg.Parameter("x", np.ones((3, 2), np.float32))
    for fn, match in [(WrongShape, r"WrongShape.backward's gradient 0 has shape \(1,2\), the input \(3,2\)"),
                      (Raises, "Raises.backward raised ValueError: boom"),
                      (TwoGrads, "TwoGrads.backward returned 2 gradients for 1 inputs")]:
        tape = tg.Tape()
        y = fn.apply(tape.param(x))
        with pytest.raises(tg.Error, match=match):
            y.sum().backward()
    with pytest.raises(tg.Error, match="NotAnArray.forward returned str"):
        NotAnArray.apply(tg.Tape().param(x))
    with pytest.raises(tg.Error, match="no argument is a Var"):
        Cube.apply(np.ones(3, np.float32), 1.0)


sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "examples", "python"))
from my_norms import MeanAbsNorm, PyRMSNorm  # noqa: E402

tg.nn.register_norm("pyrms", PyRMSNorm)
tg.nn.register_norm("meanabs", MeanAbsNorm)


def _config(norm, **kw):
    base = dict(norm=norm, dim=32, heads=2, layers=2, ctx=32, batch=4, steps=12, warmup=2, seed=3, eval_every=0)
    base.update(kw)
    return tg.lm.TrainConfig(**base)


def test_a_python_norm_trains_by_name_like_its_cpp_twin():
    assert "pyrms" in tg.nn.norm_names() and "meanabs" in tg.nn.norm_names()
    ours = tg.lm.Trainer(_config("pyrms"))
    theirs = tg.lm.Trainer(_config("rmsnorm"))
    names = [n for n, _ in ours.model.named_parameters()]
    assert names == [n for n, _ in theirs.model.named_parameters()]
    assert "blocks.0.norm1.weight" in names
    a = [ours.train_step().loss for _ in range(12)]
    b = [theirs.train_step().loss for _ in range(12)]
    # The same model, seed and batches: the losses agree to float32 round-off, and the norms'
    # weights moved alike (their gradients reached the optimizer).
    np.testing.assert_allclose(a, b, rtol=2e-4)
    wa = dict(ours.model.named_parameters())["blocks.1.norm2.weight"].value
    wb = dict(theirs.model.named_parameters())["blocks.1.norm2.weight"].value
    assert np.abs(wb - 1).max() > 1e-3
    np.testing.assert_allclose(wa, wb, rtol=1e-3, atol=1e-5)


def test_a_python_norm_resumes_and_its_mistakes_name_it(tmp_path):
    t = tg.lm.Trainer(_config("meanabs", threads=2))
    for _ in range(4):
        t.train_step()
    t.save(str(tmp_path / "run"))
    rest = [t.train_step().loss for _ in range(3)]
    again = tg.lm.Trainer.resume(str(tmp_path / "run"))
    assert [again.train_step().loss for _ in range(3)] == rest
    with pytest.raises(tg.Error, match="'pyrms' is written in Python and runs in float32 only"):
        tg.lm.Trainer(_config("pyrms", sharpness_every=2, steps=2, warmup=0)).fit()
    with pytest.raises(TypeError, match="not a tapegrad.nn.Module subclass"):
        tg.nn.register_norm("plain", object)
    with pytest.raises(tg.Error, match="pyrms"):
        tg.nn.register_norm("pyrms", PyRMSNorm)  # taken

    # A norm whose forward breaks its contract: registered in a process of its own (a registration
    # lasts as long as the process, and the other tests walk every registered norm).
    code = """
import numpy as np, tapegrad as tg
class Broken(tg.nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
    def forward(self, x):
        return x.sum(dim=-1)
class Liar(tg.nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
    def forward(self, x):
        return x
    def named_parameters(self, prefix=""):
        yield ("w", np.ones(3))
tg.nn.register_norm("broken", Broken)
tg.nn.register_norm("liar", Liar)
for norm in ("broken", "liar"):
    try:
        tg.lm.Trainer(tg.lm.TrainConfig(norm=norm, dim=16, heads=2, layers=1, ctx=16, batch=4, steps=2, warmup=0)).train_step()
    except tg.Error as e:
        print(e)
"""
    import subprocess
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(tg.__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert "norm 'broken': forward must return a Var of its input's shape" in out.stdout, out.stderr
    assert ("norm 'liar': Liar.named_parameters() must yield (str, tapegrad.Parameter) pairs, got tuple ('w', array("
            in out.stdout), out.stderr

class TinyLm(tg.nn.Module):
    """A language model of your own: embeddings, a Python norm, a C++ Linear head."""

    def __init__(self, vocab, dim=16, ctx=32):
        super().__init__()
        self.vocab_size, self.ctx = vocab, ctx
        self.wte = tg.nn.Embedding(vocab, dim)
        self.norm = MeanAbsNorm(dim)
        self.head = tg.nn.Linear(dim, vocab)

    def forward(self, tape, ids):
        return self.head(self.norm(self.wte(tape, ids)))


def test_a_model_of_your_own_trains_in_the_trainer():
    config = _config("layernorm", threads=2, steps=30, lr=1e-2)
    tg.manual_seed(0)
    model = TinyLm(tg.lm.vocab_size(config))
    head = dict(model.named_parameters())["head.weight"]
    head_before = head.value.copy()
    t = tg.lm.Trainer(config, model=model)
    losses = [t.train_step().loss for _ in range(30)]
    assert losses[-1] < losses[0] - 0.5  # it learns: the unigram statistics at least
    # Its own parameters, C++ modules' and Python ones alike, are what the optimizer stepped.
    assert np.abs(head.value - head_before).max() > 1e-3
    assert np.abs(model.norm.weight.value - 1).max() > 1e-4
    assert [n for n, _ in t.model.named_parameters()] == ["wte.weight", "norm.weight", "head.weight", "head.bias"]
    with pytest.raises(tg.Error, match="vocab_size 7 is not the tokenizer's"):
        tg.lm.Trainer(config, model=TinyLm(7))
    wrong = TinyLm(tg.lm.vocab_size(config))
    wrong.vocab_size = None
    with pytest.raises(tg.Error, match="its vocab_size is a NoneType; it must be an int"):
        tg.lm.Trainer(config, model=wrong)
    for big in (2**63, 2**70):  # past 64 bits: an error naming the attribute, not pybind's cast error
        huge = TinyLm(tg.lm.vocab_size(config))
        huge.ctx = big
        with pytest.raises(tg.Error, match="its ctx"):
            tg.lm.Trainer(config, model=huge)
    # The built-in decoder is the Trainer's own to build: said so, not "not a tapegrad.nn.Module".
    with pytest.raises(tg.Error, match="a Decoder is built by the Trainer itself from the config's model settings"):
        tg.lm.Trainer(config, model=tg.lm.Decoder(config, tg.lm.vocab_size(config)))


def test_the_fused_functional_norms_match_their_composition_and_gradcheck():
    F = tg.nn.functional
    rng = np.random.default_rng(5)
    x, w, b = rng.standard_normal((4, 6)) * 3 + 1, rng.standard_normal(6), rng.standard_normal(6)
    r = tg.gradcheck(lambda x, w, b: F.layer_norm(x, (6,), weight=w, bias=b, eps=1e-5), [x, w, b], name="layer_norm")
    assert r.ok, r.message
    r = tg.gradcheck(lambda x, w: F.rms_norm(x, weight=w, eps=1e-6), [x, w], name="rms_norm")
    assert r.ok, r.message
    # Values: the definitions (docs: x = [1, 2, 3, 4], eps 0).
    tape = tg.Tape()
    v = tape.constant(np.array([[1, 2, 3, 4]], np.float32))
    np.testing.assert_allclose(F.layer_norm(v, eps=0).numpy(), [[-1.342, -0.447, 0.447, 1.342]], atol=1e-3)
    np.testing.assert_allclose(F.rms_norm(v, eps=0).numpy(), [[0.365, 0.730, 1.095, 1.461]], atol=1e-3)
    # A Parameter as the weight; its gradient arrives.
    g = tg.Parameter("g", np.ones(4, np.float32))
    F.rms_norm(v, weight=g).sum().backward()
    np.testing.assert_allclose(g.grad, [0.365, 0.730, 1.095, 1.461], atol=1e-3)
    with pytest.raises(tg.Error, match=r"normalized_shape must be the last dimension \(4,\)"):
        F.layer_norm(v, (2, 2))
    with pytest.raises(tg.Error, match=r"weight has shape \(3\); it must be \(4,\)"):
        F.rms_norm(v, weight=tape.constant(np.ones(3, np.float32)))
