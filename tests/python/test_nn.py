"""Modules from Python: the definitions' numbers, PyTorch's gradients, state dicts, a model of your own."""
import numpy as np
import pytest

import tapegrad as tg


def run(module, x):
    tape = tg.Tape()
    return module(tape.constant(x)).numpy()


def test_the_definitions_numbers():
    x = np.array([[1.0, 2.0, 3.0, 4.0]])
    np.testing.assert_allclose(run(tg.nn.LayerNorm(4, eps=0.0), x), [[-1.342, -0.447, 0.447, 1.342]], atol=5e-4)
    np.testing.assert_allclose(run(tg.nn.RMSNorm(4, eps=0.0), x), [[0.365, 0.730, 1.095, 1.461]], atol=5e-4)


def test_every_registered_norm_by_name():
    names = tg.nn.norm_names()
    assert {"layernorm", "rmsnorm", "none"} <= set(names)
    x = np.random.default_rng(0).standard_normal((3, 8), dtype=np.float32)
    for name in names:
        y = run(tg.nn.norm(name, 8), x)
        assert y.shape == (3, 8) and np.isfinite(y).all(), name
    with pytest.raises(tg.Error, match="unknown norm 'batchnorm'"):
        tg.nn.norm("batchnorm", 8)


def test_linear_layernorm_gradients_match_pytorch():
    torch = pytest.importorskip("torch")  # the test command installs python3-torch
    tg.manual_seed(3)
    lin, ln = tg.nn.Linear(6, 5), tg.nn.LayerNorm(5)
    x = np.random.default_rng(2).standard_normal((4, 6)).astype(np.float32)
    up = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32)
    tape = tg.Tape()
    y = ln(lin(tape.constant(x)))
    (y * tape.constant(up)).sum().backward()

    tl, tn = torch.nn.Linear(6, 5), torch.nn.LayerNorm(5)
    with torch.no_grad():
        tl.weight.copy_(torch.from_numpy(lin.state_dict()["weight"].copy()))
        tl.bias.copy_(torch.from_numpy(lin.state_dict()["bias"].copy()))
    ty = tn(tl(torch.from_numpy(x)))
    (ty * torch.from_numpy(up)).sum().backward()
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    grads = dict(lin.named_parameters())
    np.testing.assert_allclose(grads["weight"].grad, tl.weight.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(grads["bias"].grad, tl.bias.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(dict(ln.named_parameters())["weight"].grad, tn.weight.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_state_dict_round_trip_and_strictness():
    tg.manual_seed(1)
    a = tg.nn.MLP(8)
    tg.manual_seed(2)
    b = tg.nn.MLP(8)
    x = np.random.default_rng(0).standard_normal((2, 8), dtype=np.float32)
    assert not np.allclose(run(a, x), run(b, x))
    b.load_state_dict({k: v.copy() for k, v in a.state_dict().items()})
    np.testing.assert_array_equal(run(a, x), run(b, x))
    with pytest.raises(tg.Error, match=r"MLP: tensor 'fc.weight' has shape \(3,3\) but the model needs \(32,8\); missing 3"):
        b.load_state_dict({"fc.weight": np.ones((3, 3))})


def test_a_python_module_loads_a_state_dict_as_a_cpp_module_does():
    class Net(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = tg.nn.Linear(2, 2)
            self.scale = tg.Parameter("scale", np.zeros(3, dtype=np.float32))
    net = Net()
    view = net.state_dict()["scale"]  # a view of the parameter: loading writes through it
    with pytest.raises(tg.Error, match="Net: missing 2 tensor\\(s\\): 'fc.weight', 'fc.bias'; unexpected 1 tensor\\(s\\): 'x'"):
        net.load_state_dict({"scale": np.ones(3, dtype=np.float32), "x": np.ones(1, dtype=np.float32)})
    np.testing.assert_array_equal(view, 0.0)  # checked whole before anything is written
    report = net.load_state_dict({"scale": np.arange(3, dtype=np.float32)}, strict=False)
    assert report.missing == ["fc.weight", "fc.bias"] and report.unexpected == []
    np.testing.assert_array_equal(view, [0.0, 1.0, 2.0])
    with pytest.raises(TypeError, match="load_state_dict: expected a mapping of names to arrays .* got ndarray"):
        net.load_state_dict(np.ones(3))
    with pytest.raises(TypeError, match="load_state_dict: keys are parameter names \\(str\\), got int"):
        tg.nn.Linear(2, 2).load_state_dict({0: np.ones(3)})


class TwoLayer(tg.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = tg.nn.Sequential(tg.nn.Linear(2, 16), tg.nn.ReLU())
        self.head = tg.nn.Linear(16, 1)

    def forward(self, x):
        return self.head(self.body(x))


def test_a_model_of_your_own_trains():
    tg.manual_seed(0)
    model = TwoLayer()
    assert [n for n, _ in model.named_parameters()] == ["body.0.weight", "body.0.bias", "head.weight", "head.bias"]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 2)).astype(np.float32)
    y = (x[:, :1] * x[:, 1:] > 0).astype(np.float32)  # XOR of the signs
    opt = tg.optim.AdamW(model.parameters(), lr=0.02, weight_decay=0)
    tape = tg.Tape()
    for step in range(300):
        tape.clear()
        loss = tg.mse_loss(model(tape.constant(x)), tape.constant(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 0:
            first = loss.item()
    assert first > 0.2 and loss.item() < 0.05, (first, loss.item())


def test_schedules_from_the_registry():
    s = tg.optim.schedule("cosine", lr=1.0, min_lr=0.1, warmup=10, total=110)
    assert s(9) == pytest.approx(1.0)
    assert s(109) == pytest.approx(0.1, abs=1e-3)
    assert "cosine" in tg.optim.schedule_names()
    with pytest.raises(tg.Error, match="unknown schedule"):
        tg.optim.schedule("zigzag", lr=1, total=10)


def test_optimizers_come_from_the_registry():
    assert {"adamw", "sgd"} <= set(tg.optim.optimizer_names())

    def stepped(make):
        w = tg.Parameter("w", np.arange(6, dtype=np.float32).reshape(2, 3))
        opt = make([w])
        for _ in range(3):
            tape = tg.Tape()
            ((tape.param(w) * 1.5) ** 2).sum().backward()
            opt.step()
            w.zero_grad()
        return w.value.copy(), repr(opt)
    a, ra = stepped(lambda p: tg.optim.AdamW(p, lr=0.1, weight_decay=0.1))
    b, rb = stepped(lambda p: tg.optim.optimizer("adamw", p, lr=0.1, weight_decay=0.1))
    np.testing.assert_array_equal(a, b)
    assert ra.startswith("AdamW(") and rb.startswith("adamw(")
    c, _ = stepped(lambda p: tg.optim.SGD(p, lr=0.01, momentum=0.5))
    d, _ = stepped(lambda p: tg.optim.optimizer("sgd", p, lr=0.01, momentum=0.5))
    np.testing.assert_array_equal(c, d)
    assert not np.array_equal(a, np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(tg.Error, match="unknown optimizer 'lion'"):
        tg.optim.optimizer("lion", [tg.Parameter("w", np.ones(2, np.float32))])
