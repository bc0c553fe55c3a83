"""Mixed precision from Python: TrainConfig(precision="bf16") and tapegrad.autocast."""
import threading

import numpy as np
import pytest

import tapegrad as tg


def small(**kw):
    base = dict(steps=12, dim=32, layers=1, heads=2, ctx=16, batch=4, warmup=2, eval_every=0, threads=1, seed=3)
    base.update(kw)
    return tg.lm.TrainConfig(**base)


def losses(config):
    trainer = tg.lm.Trainer(config)
    return [trainer.train_step().loss for _ in range(config.steps)]


def test_bf16_training_is_deterministic_and_near_float32():
    fp32, bf16, again = losses(small()), losses(small(precision="bf16")), losses(small(precision="bf16"))
    assert bf16 == again  # same seed, threads and kernels: the same bits
    assert bf16 != fp32   # the bf16 path was taken
    # bf16 operands carry 2^-8 relative rounding; over 12 steps the losses stay within a few 1e-3.
    assert max(abs(a - b) for a, b in zip(fp32, bf16)) < 2e-2
    assert losses(small(precision="bf16", norm_precision="bf16")) != bf16


def test_precision_names_are_checked():
    with pytest.raises(tg.SettingError, match="'precision': unknown precision 'fp16'; known: fp32, bf16"):
        small(precision="fp16")
    with pytest.raises(tg.SettingError, match="'norm-precision': unknown precision 'half'; known: fp32, bf16"):
        small(norm_precision="half")
    assert small(precision="bf16").precision == "bf16"


def test_autocast_rounds_the_operands_of_a_product():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((8, 16)).astype(np.float32), rng.standard_normal((16, 4)).astype(np.float32)
    tape = tg.Tape()
    exact = (tape.constant(a) @ tape.constant(b)).numpy()
    with tg.autocast("bf16"):
        mixed = (tape.constant(a) @ tape.constant(b)).numpy()

    def bf16(x):  # round to nearest even on the bit pattern, as tapegrad's bf16.h
        u = x.view(np.uint32).astype(np.uint64)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16).astype(np.uint32).view(np.float32)

    reference = bf16(a).astype(np.float64) @ bf16(b).astype(np.float64)
    assert np.abs(mixed - reference).max() < 1e-5
    assert np.abs(exact - reference).max() > 1e-3  # float32 differs: the operands were not rounded
    with pytest.raises(tg.Error, match="already entered"):
        ac = tg.autocast("bf16")
        with ac:
            with ac:
                pass
    with pytest.raises(tg.Error, match="autocast dtype .fp8.: unknown precision; known: fp32, bf16"):
        tg.autocast("fp8")


def _gemm_precision():
    """The calling thread's: a product whose operand bf16 rounds away (1 + 2^-10 -> 1) tells."""
    tape = tg.Tape()
    y = tape.constant(np.float32([[1 + 2**-10]])) @ tape.constant(np.float32([[1]]))
    return "bf16" if y.numpy()[0, 0] == 1.0 else "fp32"


def test_autocast_blocks_exited_out_of_order_or_elsewhere_are_refused_and_change_nothing():
    outer, inner = tg.autocast("bf16"), tg.autocast("bf16")
    outer.__enter__()
    inner.__enter__()
    # Exiting the outer first would restore fp32 now, and the inner's exit bf16 for good.
    with pytest.raises(tg.Error, match="autocast: exited out of order: a block entered inside this one is still open"):
        outer.__exit__(None, None, None)
    assert _gemm_precision() == "bf16"
    errors = []

    def exit_elsewhere():
        try:
            inner.__exit__(None, None, None)
        except tg.Error as e:
            errors.append(str(e))

    thread = threading.Thread(target=exit_elsewhere)
    thread.start()
    thread.join()
    assert errors == ["autocast: exited on another thread than the one that entered it"]
    inner.__exit__(None, None, None)
    assert _gemm_precision() == "bf16"
    outer.__exit__(None, None, None)
    assert _gemm_precision() == "fp32"
    with pytest.raises(tg.Error, match="autocast: exit without enter"):
        outer.__exit__(None, None, None)
    # Dropped while open as the innermost block: exited.
    tg.autocast("bf16").__enter__()
    assert _gemm_precision() == "fp32"
