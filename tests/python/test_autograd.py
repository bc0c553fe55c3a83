"""Tensors, the tape and gradcheck from Python."""
import gc

import numpy as np
import pytest

import tapegrad as tg


def test_tensor_shares_memory_with_numpy():
    t = tg.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    a = np.asarray(t)
    assert a.shape == (2, 3) and a.dtype == np.float32
    a[1, 2] = 42.0  # a view: the tensor sees the write
    assert t.numpy()[1, 2] == 42.0
    del t  # the array keeps the tensor's memory alive
    assert a[1, 2] == 42.0 and a.sum() == 0 + 1 + 2 + 3 + 4 + 42


def test_parameter_value_and_grad_are_views():
    p = tg.Parameter("w", np.ones((2, 2)))
    v = p.value
    v[0, 0] = 5
    assert p.value[0, 0] == 5
    tape = tg.Tape()
    loss = (tape.param(p) * 3.0).sum()
    loss.backward()
    np.testing.assert_array_equal(p.grad, np.full((2, 2), 3.0, np.float32))
    tape.clear()
    loss = (tape.param(p) * 3.0).sum()
    loss.backward()  # gradients accumulate until zero_grad, as in torch
    np.testing.assert_array_equal(p.grad, np.full((2, 2), 6.0, np.float32))
    p.zero_grad()
    assert not p.grad.any()


def test_matmul_relu_mean_gradient_against_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    w0 = rng.standard_normal((3, 4)).astype(np.float32)
    w = tg.Parameter("w", w0)
    tape = tg.Tape()
    y = (tape.constant(x) @ tape.param(w)).relu()
    loss = (y * y).mean()
    loss.backward()
    h = x @ w0
    expected = x.T @ (2 * np.maximum(h, 0) * (h > 0) / h.size)
    np.testing.assert_allclose(loss.item(), (np.maximum(h, 0) ** 2).mean(), rtol=1e-6)
    np.testing.assert_allclose(w.grad, expected, rtol=1e-5, atol=1e-7)


def test_python_operators_and_scalars():
    tape = tg.Tape()
    a = tape.constant(np.array([1.0, 2.0, 4.0]))
    np.testing.assert_allclose((2.0 - a / 2.0 + 1.0).numpy(), [2.5, 2.0, 1.0])
    np.testing.assert_allclose((1.0 / a).numpy(), [1.0, 0.5, 0.25])
    np.testing.assert_allclose((-a * 3.0).numpy(), [-3.0, -6.0, -12.0])
    np.testing.assert_allclose((a ** 2).sqrt().numpy(), [1.0, 2.0, 4.0], rtol=1e-6)
    assert a.sum().item() == 7.0


def test_no_grad_records_no_node():
    p = tg.Parameter("w", np.ones(3))
    tape = tg.Tape()
    with tape.no_grad():
        y = (tape.param(p) * 2.0).sum()
    assert not y.requires_grad and tape.num_nodes == 0
    y2 = (tape.param(p) * 2.0).sum()
    assert y2.requires_grad and tape.num_nodes > 0


def test_no_grad_blocks_exited_by_hand_out_of_order_are_refused_and_the_tape_records_again():
    p = tg.Parameter("w", np.ones(3))
    tape = tg.Tape()
    outer, inner = tape.no_grad(), tape.no_grad()
    outer.__enter__()
    inner.__enter__()
    # Exiting the outer first would re-enable recording now and disable it for good at the inner's exit.
    with pytest.raises(tg.Error, match="no_grad: exited out of order: a block entered inside this one is still open"):
        outer.__exit__(None, None, None)
    assert not (tape.param(p) * 2.0).sum().requires_grad  # still inside both
    inner.__exit__(None, None, None)
    outer.__exit__(None, None, None)
    with pytest.raises(tg.Error, match="no_grad: exit without enter"):
        outer.__exit__(None, None, None)
    y = (tape.param(p) * 2.0).sum()
    assert y.requires_grad
    y.backward()
    np.testing.assert_array_equal(p.grad, [2.0, 2.0, 2.0])


def test_a_no_grad_block_left_open_on_a_lent_tape_is_named_then_dropped_safely():
    left_open = []

    def f(x):
        block = x.tape.no_grad()
        block.__enter__()
        left_open.append(block)
        return (x * x).sum()

    with pytest.raises(tg.Error, match="does not require grad"):
        tg.gradcheck(f, [np.ones(3)])
    # gradcheck's tape is gone: exiting names that; dropping the block must not write into it.
    with pytest.raises(tg.Error, match="belongs to a tape that no longer exists"):
        left_open[0].__exit__(None, None, None)
    del left_open[:]
    gc.collect()
    assert tg.gradcheck(lambda x: (x * x).sum(), [np.ones(3)]).ok


def test_gradcheck_of_a_composed_function():
    rng = np.random.default_rng(1)
    r = tg.gradcheck(lambda x, w: ((x @ w).tanh() * x.sum()).mean(),
                     [rng.standard_normal((4, 3)), rng.standard_normal((3, 2))], name="tanh_mm")
    assert r.ok, r.message
    assert r.max_rel_error < 1e-6
    assert r.variants_run >= 3  # plain, each input constant, and the aliased pairs it can run


def test_gradcheck_vars_cannot_escape():
    kept = []

    def f(x):
        kept.append(x)
        return (x * x).sum()

    assert tg.gradcheck(f, [np.ones(3)]).ok
    with pytest.raises(tg.Error, match="no longer exists"):
        kept[0].numpy()


def test_stale_var_after_clear_is_an_error():
    tape = tg.Tape()
    x = tape.constant(np.ones(2))
    tape.clear()
    with pytest.raises(tg.Error, match="stale"):
        x.numpy()


def test_cross_entropy_owns_its_targets():
    logits0 = np.array([[2.0, 0.5, -1.0], [0.1, 0.2, 0.3]], np.float32)
    p = tg.Parameter("logits", logits0)
    tape = tg.Tape()
    targets = np.array([0, 2])
    loss = tg.cross_entropy(tape.param(p), targets)
    del targets  # the tape copied them
    loss.backward()
    z = logits0 - logits0.max(1, keepdims=True)
    s = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    onehot = np.eye(3)[[0, 2]]
    np.testing.assert_allclose(loss.item(), -np.log(s[[0, 1], [0, 2]]).mean(), rtol=1e-6)
    np.testing.assert_allclose(p.grad, (s - onehot) / 2, rtol=1e-5, atol=1e-7)


def test_numpy_broadcasting_forward_and_backward_against_torch():
    """x / x.mean(dim=-1, keepdim=True) on (4,8) / (4,1), (2,1,3) * (4,1) and (1,3) - (2,1): numpy's
    rule, values and gradients (float32) equal to torch's in float64 within float32 rounding."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    for sa, sb, op in [((4, 8), None, "mean"), ((2, 1, 3), (4, 1), "mul"), ((1, 3), (2, 1), "sub")]:
        xa = (rng.standard_normal(sa) + 2.0).astype(np.float32)
        xb = (rng.standard_normal(sb) + 2.0).astype(np.float32) if sb else None
        tape = tg.Tape()
        pa = tg.Parameter("a", xa)
        a = tape.param(pa)
        pb = tg.Parameter("b", xb) if sb else None
        b = tape.param(pb) if sb else None
        y = a / a.mean(dim=-1, keepdim=True) if op == "mean" else (a * b if op == "mul" else a - b)
        up = rng.standard_normal(y.numpy().shape).astype(np.float32)
        y.backward(up)
        ta = torch.tensor(xa.astype(np.float64), requires_grad=True)
        tb = torch.tensor(xb.astype(np.float64), requires_grad=True) if sb else None
        ty = ta / ta.mean(dim=-1, keepdim=True) if op == "mean" else (ta * tb if op == "mul" else ta - tb)
        ty.backward(torch.tensor(up.astype(np.float64)))
        assert y.numpy().shape == tuple(ty.shape)
        np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(pa.grad, ta.grad.numpy(), rtol=1e-4, atol=1e-5)
        if sb:
            np.testing.assert_allclose(pb.grad, tb.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_arrays_beside_vars_reshape_minus_one_and_T():
    tape = tg.Tape()
    p = tg.Parameter("p", np.arange(8, dtype=np.float32).reshape(2, 4))
    x = tape.param(p)
    col = np.array([[1.0], [2.0]], dtype=np.float32)
    np.testing.assert_allclose((x + col).numpy(), p.value + col)
    np.testing.assert_allclose((col - x).numpy(), col - p.value)
    np.testing.assert_allclose((x * col).numpy(), p.value * col)
    np.testing.assert_allclose((col / (x + 1.0)).numpy(), col / (p.value + 1.0), rtol=1e-6)
    assert x.reshape([4, -1]).numpy().shape == (4, 2)
    assert x.reshape([-1]).numpy().shape == (8,)
    assert x.reshape(4, -1).shape == x.reshape((4, -1)).shape == (4, 2)  # numpy's and torch's two spellings
    assert x.reshape(-1).shape == (8,)
    with pytest.raises(TypeError, match="Var.reshape dims: expected an integer, got str"):  # a wrong type, as torch's
        x.reshape(4, "2")
    with pytest.raises(tg.Error, match="only one dim can be -1"):
        x.reshape([-1, -1])
    with pytest.raises(tg.Error, match="8 elements do not divide into the other dims"):
        x.reshape([3, -1])
    np.testing.assert_allclose(x.T.numpy(), p.value.T)
    (x.T * np.arange(2, dtype=np.float32)).sum().backward()
    np.testing.assert_allclose(p.grad, np.tile(np.arange(2, dtype=np.float32).reshape(2, 1), (1, 4)))


def test_abs_and_basic_indexing_with_gradients():
    tape = tg.Tape()
    v = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    p = tg.Parameter("p", v)
    x = tape.param(p)
    np.testing.assert_allclose(abs(x).numpy(), np.abs(v))
    np.testing.assert_allclose(x[0].numpy(), v[0])
    np.testing.assert_allclose(x[1:3].numpy(), v[1:3])
    np.testing.assert_allclose(x[:, -1].numpy(), v[:, -1])
    np.testing.assert_allclose(x[-1, 1:3].numpy(), v[-1, 1:3])
    (x[1:3, 0] * np.array([2.0, 3.0], dtype=np.float32)).sum().backward()
    want = np.zeros_like(v)
    want[1, 0], want[2, 0] = 2, 3
    np.testing.assert_allclose(p.grad, want)
    with pytest.raises(tg.Error, match="index 3 is out of range for dim 0 of size 3"):
        x[3]
    with pytest.raises(tg.Error, match="step 1 only"):
        x[::2]
    with pytest.raises(TypeError):
        x["a"]


def test_a_var_is_a_sequence_of_its_rows_and_an_array_like_as_torchs_tensors():
    tape = tg.Tape()
    p = tg.Parameter("w", np.arange(6, dtype=np.float32).reshape(2, 3))
    w = tape.param(p)
    assert len(w) == 2 and [r.shape for r in w] == [(3,), (3,)]  # for-loops end at the last row
    sum((r * r).sum() for r in w).backward()
    np.testing.assert_array_equal(p.grad, 2 * np.arange(6).reshape(2, 3))
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d Var"):
        len(w.sum())
    np.testing.assert_array_equal(np.asarray(w), p.value)  # __array__: a copy of the value
    assert np.asarray(w, dtype=np.float64).dtype == np.float64
    assert isinstance(np.ones((2, 3), np.float32) + w, tg.Var)  # numpy defers to the Var: still recorded


def test_lists_and_numbers_are_arrays_at_the_tapes_precision():
    # A list or a Python number has no dtype: it is taken at the tape's, as torch.tensor([0.1]);
    # a numpy array keeps its own and is refused where float32 would change its values.
    tape = tg.Tape()
    np.testing.assert_array_equal(tape.constant([0.1, 2.0]).numpy(), np.array([0.1, 2.0], np.float32))
    assert tape.constant(3.0).shape == () and tg.Tensor([1, 2, 3]).numpy().tolist() == [1.0, 2.0, 3.0]
    assert tg.Parameter("w", [[1.0, 2.0]]).shape == (1, 2)
    logits = tape.constant(np.zeros((2, 3), np.float32))
    assert abs(tg.cross_entropy(logits, [0, 2]).item() - np.log(3)) < 1e-6
    assert tg.nn.Embedding(5, 4)(tape, [[1, 2, 3]]).shape == (1, 3, 4)
    with pytest.raises(tg.Error, match="a float64 array whose values float32 cannot hold exactly"):
        tape.constant(np.array([0.1]))
    with pytest.raises(tg.Error, match="expected an array of numbers, got dtype <U1"):
        tape.constant(["a"])
    with pytest.raises(TypeError):
        tape.constant([[1, 2], [3]])  # ragged: not an array
    with pytest.raises(TypeError):
        tape.constant(None)
