"""Norms written in Python, as a user writes one: a tapegrad.nn.Module built as cls(dim, eps=eps)
whose forward composes tape ops; tg.nn.register_norm(name, cls) trains it by name. The test suite
(tests/python/test_custom.py) and bench/python_norm_cost.py use these.
"""
import numpy as np

import tapegrad as tg


class ScaledNorm(tg.nn.Module):
    """w x / scale(x), a learned gain w (ones at the start) over a per-row scale."""

    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = tg.Parameter("weight", np.ones(dim, np.float32))

    def scale(self, x):
        raise NotImplementedError

    def forward(self, x):
        return x / self.scale(x) * x.tape.param(self.weight)


class PyRMSNorm(ScaledNorm):
    """RMSNorm composed in Python: w x / sqrt(mean(x^2) + eps)."""

    def scale(self, x):
        return ((x * x).mean(dim=-1, keepdim=True) + self.eps).sqrt()


class MeanAbsNorm(ScaledNorm):
    """w x / (mean|x| + eps)"""

    def scale(self, x):
        return x.abs().mean(dim=-1, keepdim=True) + self.eps


class FusedRMSNorm(ScaledNorm):
    """RMSNorm through tg.nn.functional.rms_norm: the built-in fused node, called from Python."""

    def forward(self, x):
        return tg.nn.functional.rms_norm(x, weight=self.weight, eps=self.eps)
