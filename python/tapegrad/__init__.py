"""tapegrad: a tape-based autograd engine in C++ and the norm-stability lab built on it.

    import numpy as np, tapegrad as tg
    tape = tg.Tape()
    w = tg.Parameter("w", np.random.randn(3, 1).astype(np.float32))
    x = tape.constant(np.random.randn(8, 3).astype(np.float32))
    loss = ((x @ tape.param(w)) ** 2).mean()
    loss.backward()            # w.grad is a numpy view of the gradient

Submodules: tapegrad.nn (modules), tapegrad.optim (AdamW, SGD, schedules), tapegrad.lm
(TrainConfig, Trainer), tapegrad.lab (sweeps and their reports). Every error of the engine is a
tapegrad.Error (a RuntimeError) with the engine's message; a bad setting is a tapegrad.SettingError
(also a ValueError); settings that contradict each other without being invalid (warmup >= steps)
give a tapegrad.SettingWarning. tapegrad.Function is an op written in Python with its own backward
(torch.autograd.Function); tapegrad.nn.register_norm(name, cls) trains a norm written in Python by name. `with tg.autocast("bf16"):` runs the float GEMMs recorded inside on
bfloat16 operands (mixed precision, as torch.autocast); TrainConfig(precision="bf16") trains so.
"""
from ._tapegrad import (  # noqa: F401
    Error,
    GradcheckResult,
    Parameter,
    SettingError,
    SettingWarning,
    Tape,
    Tape64,
    Tensor,
    Var,
    Var64,
    autocast,
    cross_entropy,
    gradcheck,
    kernel_variant,
    lm,
    mse_loss,
    num_threads,
    optim,
    set_num_threads,
)
from .function import Function  # noqa: F401,E402
from . import nn, lab  # noqa: F401,E402
from ._tapegrad._nn import manual_seed  # noqa: F401,E402

__all__ = [
    "Error", "Function", "GradcheckResult", "Parameter", "SettingError", "SettingWarning", "Tape", "Tape64", "Tensor", "Var", "Var64",
    "autocast", "cross_entropy", "gradcheck", "kernel_variant", "lab", "lm", "manual_seed", "mse_loss", "nn",
    "num_threads", "optim", "set_num_threads",
]
