"""Module hooks from Python: activations and gradients read inside a decoder, inside the Trainer,
on a Python module; removal; mistakes (a returned value, a raising hook, an escaped Var)."""
import numpy as np
import pytest

import tapegrad as tg

IDS = np.arange(12).reshape(2, 6) % 11
TARGETS = (IDS + 1) % 11


def decoder(seed=1):
    return tg.nn.Decoder(tg.lm.TrainConfig(dim=32, heads=2, layers=2, ctx=16), vocab=11, seed=seed)


def test_named_modules_and_get_submodule():
    model = decoder()
    names = [n for n, _ in model.named_modules()]
    assert names[0] == "" and "blocks.1" in names and "blocks.1.norm2" in names
    assert names.index("blocks.1") < names.index("blocks.1.norm2")
    norm = model.get_submodule("blocks.1.norm2")
    assert type(norm).__name__ == "LayerNorm"
    assert [n for n, _ in norm.named_parameters()] == ["blocks.1.norm2.weight", "blocks.1.norm2.bias"]
    with pytest.raises(AttributeError, match="has no module 'blocks.9'; it has: .*blocks.1.norm2"):
        model.get_submodule("blocks.9")
    with pytest.raises(AttributeError, match="LayerNorm has no module 'x'; it has no submodules"):
        norm.get_submodule("x")
    with pytest.raises(tg.Error, match=r"GELU: no parameter named 'w' \(it has none\)"):
        tg.nn.GELU().parameter("w")


def test_hooks_read_activations_and_gradients_inside_a_decoder():
    model, twin = decoder(), decoder()
    norm = model.get_submodule("blocks.1.norm2")
    seen, grads = {}, []

    def forward_hook(module, inputs, output):
        assert module is norm  # the Python object the hook was registered on
        seen["in"], seen["out"] = inputs[0].numpy(), output
    h1 = norm.register_forward_hook(forward_hook)
    h2 = norm.register_full_backward_pre_hook(lambda module, grad_output: grads.append(grad_output[0]))
    tape = tg.Tape()
    tape.retain_grad(True)
    _, loss = model(tape, IDS, targets=TARGETS)
    assert seen["in"].shape == (2, 6, 32)
    x = seen["in"].astype(np.float64)  # the output is LayerNorm(input): weights 1, biases 0 at init
    expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(seen["out"].numpy(), expected, rtol=1e-4, atol=1e-5)
    loss.backward()
    assert len(grads) == 1 and grads[0].shape == (2, 6, 32) and np.abs(grads[0]).sum() > 0
    np.testing.assert_array_equal(grads[0], seen["out"].grad)  # d loss / d output, as the tape holds it
    # Hooks change nothing the model computes.
    t2 = tg.Tape()
    _, l2 = twin(t2, IDS, targets=TARGETS)
    l2.backward()
    assert loss.item() == l2.item()
    for a, b in zip(model.parameters(), twin.parameters()):
        np.testing.assert_array_equal(a.grad, b.grad)
    # Removed (twice is harmless), the hooks run no more.
    h1.remove(), h2.remove(), h2.remove()
    model(tg.Tape(), IDS, targets=TARGETS)[1].backward()
    assert len(grads) == 1


def test_hooks_run_inside_the_trainer_and_their_vars_stay_inside():
    t = tg.lm.Trainer(tg.lm.TrainConfig(dim=32, heads=2, layers=2, ctx=32, batch=4, steps=3, seed=1, threads=1))
    rms, escaped = [], []

    def hook(module, inputs, output):
        rms.append(float(np.sqrt((output.numpy() ** 2).mean())))
        escaped.append(output)
    with t.model.get_submodule("blocks.0").register_forward_hook(hook):
        t.train_step()
        t.train_step()
    t.train_step()  # the with-block removed the hook
    assert len(rms) == 2 and all(r > 0 for r in rms)
    with pytest.raises(tg.Error, match="no longer exists"):
        escaped[0].numpy()


def _observed_step(threads, per_worker=False):
    """One training step on `threads` threads with forward and backward hooks on block 0."""
    import threading
    t = tg.lm.Trainer(tg.lm.TrainConfig(dim=32, heads=2, layers=2, ctx=16, batch=5, steps=3, warmup=1,
                                        seed=1, threads=threads))
    seen = {"out": [], "grad": [], "threads": set()}
    block = t.model.get_submodule("blocks.0")

    def forward(module, inputs, output):
        seen["out"].append(output.numpy().copy())
        seen["threads"].add(threading.get_ident())

    def backward(module, grad_output):
        seen["grad"].append(grad_output[0].copy())
        seen["threads"].add(threading.get_ident())
    tg.nn.hooks_per_worker(per_worker)
    try:
        with block.register_forward_hook(forward), block.register_full_backward_pre_hook(backward):
            t.train_step()
            t.evaluate()  # no hooks inside evaluate() unless asked
            calls_after_eval = len(seen["out"])
            t.evaluate(hooks=True)
    finally:
        tg.nn.hooks_per_worker(False)
    return seen, calls_after_eval


def test_hooks_run_once_per_module_call_with_the_whole_batch_on_the_calling_thread():
    import threading
    one, _ = _observed_step(1)
    two, after_eval = _observed_step(2)
    # One forward and one backward call per step, on the caller's thread, with all 5 sequences —
    # the same values as on one thread (the workers' slices joined in order).
    assert after_eval == 1 and len(two["grad"]) == 1
    assert two["threads"] == {threading.get_ident()}
    assert two["out"][0].shape == one["out"][0].shape == (5, 16, 32)
    np.testing.assert_allclose(two["out"][0], one["out"][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(two["grad"][0], one["grad"][0], rtol=1e-4, atol=1e-9)
    assert np.abs(two["grad"][0]).max() > 0
    # evaluate(hooks=True) runs them: once per evaluation batch.
    assert len(two["out"]) > 1
    # Per worker, as asked: one call per thread's slice (2 + 3 sequences).
    per, _ = _observed_step(2, per_worker=True)
    assert sorted(o.shape[0] for o in per["out"][:2]) == [2, 3]
    assert len(per["grad"]) == 2


def test_hooks_on_a_python_module():
    class Net(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = tg.nn.Sequential(tg.nn.Linear(4, 8), tg.nn.ReLU())
            self.head = tg.nn.Linear(8, 1)

        def forward(self, x):
            return self.head(self.body(x))
    tg.manual_seed(0)
    net = Net()
    assert [n for n, _ in net.named_modules()] == ["", "body", "body.0", "body.1", "head"]
    assert net.get_submodule("body.0") is net.body[0]
    with pytest.raises(TypeError, match=r"get_submodule: path is a dotted name \(str\), got int"):
        net.get_submodule(0)
    with pytest.raises(TypeError, match=r"named_parameters: prefix is the dotted name .* got ndarray"):
        net.named_parameters(np.zeros(2))
    calls, grads = [], []
    net.body.register_forward_hook(lambda m, inputs, out: calls.append((m, len(inputs), out.shape)))
    net.body.register_full_backward_pre_hook(lambda m, g: grads.append(g[0]))
    tape = tg.Tape()
    tape.retain_grad(True)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    y = net(tape.constant(x))
    upstream = np.random.default_rng(1).standard_normal((3, 1)).astype(np.float32)
    (y * tape.constant(upstream)).sum().backward()
    assert calls == [(net.body, 1, (3, 8))]
    # d loss / d body's output = upstream W_head, masked by nothing after ReLU's output.
    w = net.head.state_dict()["weight"]
    np.testing.assert_allclose(grads[0], upstream @ w, rtol=1e-6)


def test_hook_mistakes_are_errors_not_crashes():
    lin = tg.nn.Linear(3, 2)
    x = np.ones((1, 3), np.float32)
    with lin.register_forward_hook(lambda m, i, o: o):
        with pytest.raises(tg.Error, match="a forward hook returned Var; a hook must return None"):
            lin(tg.Tape().constant(x))

    def boom(m, i, o):
        raise ValueError("from the hook")
    with lin.register_forward_hook(boom):
        with pytest.raises(ValueError, match="from the hook"):
            lin(tg.Tape().constant(x))
    with lin.register_full_backward_pre_hook(lambda m, g: 1 / 0):
        tape = tg.Tape()
        y = lin(tape.param(tg.Parameter("x", x)))
        with pytest.raises(ZeroDivisionError):
            y.sum().backward()
    with pytest.raises(TypeError):
        lin.register_forward_hook(3)
    # A hook that removes itself and adds another while the hooks run.
    handles, counts = {}, {"a": 0, "b": 0}

    def once(m, i, o):
        counts["a"] += 1
        handles["a"].remove()
        handles["b"] = m.register_forward_hook(lambda *_: counts.__setitem__("b", counts["b"] + 1))
    handles["a"] = lin.register_forward_hook(once)
    lin(tg.Tape().constant(x))
    lin(tg.Tape().constant(x))
    assert counts == {"a": 1, "b": 1}
    assert lin(tg.Tape().constant(x)).shape == (1, 2)  # still a working module


def test_a_hook_that_calls_back_into_its_trainer_gets_an_error_and_the_trainer_goes_on():
    t = tg.lm.Trainer(tg.lm.TrainConfig(dim=32, heads=2, layers=2, ctx=16, batch=4, steps=5, warmup=1, seed=1))
    plain = tg.lm.Trainer(tg.lm.TrainConfig(dim=32, heads=2, layers=2, ctx=16, batch=4, steps=5, warmup=1, seed=1))
    errors = []

    def hook(module, inputs, output):
        if errors:
            return
        try:
            t.train_step()  # would clear the tapes the running step is using
        except tg.Error as e:
            errors.append(str(e))
    with t.model.get_submodule("blocks.0").register_forward_hook(hook):
        loss = t.train_step().loss
    assert errors == ["Trainer::train_step: called while this trainer's train_step is running "
                      "(from a module hook or a callback inside it); call it after that returns"]
    assert loss == plain.train_step().loss and t.step == 1
    assert t.train_step().loss == plain.train_step().loss
