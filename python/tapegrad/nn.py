"""tapegrad.nn: the engine's modules, and Module / Sequential for models of your own.

The C++ modules (Linear, LayerNorm, RMSNorm, CausalSelfAttention, MLP, Embedding, Dropout, the
activations, and any registered norm by name through norm()) are called on a Var and record on
its tape. Module is the base for a model written in Python: its attributes that are modules or
parameters are its children, found in assignment order, so parameters(), named_parameters(),
state_dict(), load_state_dict(), train() and eval() work as in torch.
"""
from collections import OrderedDict

import numpy as np

from ._tapegrad import Parameter
from ._tapegrad._nn import (  # noqa: F401
    GELU,
    MLP,
    CausalSelfAttention,
    Dropout,
    Embedding,
    LayerNorm,
    Linear,
    LoadReport,
    ReLU,
    RMSNorm,
    Sigmoid,
    SiLU,
    Tanh,
    UnaryModule,
    manual_seed,
    norm,
    norm_names,
)
from ._tapegrad._nn import Module as _CppModule
from ._tapegrad.lm import Decoder, LanguageModel  # noqa: F401


class Module:
    """A model of your own: assign modules and Parameters as attributes, write forward()."""

    def __init__(self):
        object.__setattr__(self, "_children", OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_children" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}: call super().__init__() before assigning attributes")
        if isinstance(value, (Module, _CppModule, Parameter)):
            self._children[name] = value
        object.__setattr__(self, name, value)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def named_parameters(self, prefix=""):
        out = []
        for name, child in self._children.items():
            if isinstance(child, Parameter):
                out.append((prefix + name, child))
            else:
                out += [(prefix + name + "." + n, p) for n, p in child.named_parameters()]
        return out

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def num_parameters(self):
        return sum(p.numel() for p in self.parameters())

    def state_dict(self):
        """Every parameter's value by dotted name: numpy views of the parameters' memory (as torch's)."""
        return OrderedDict((n, p.value) for n, p in self.named_parameters())

    def load_state_dict(self, state_dict, strict=True):
        mine = dict(self.named_parameters())
        missing = [n for n in mine if n not in state_dict]
        unexpected = [n for n in state_dict if n not in mine]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        for name, p in mine.items():
            if name in state_dict:
                value = np.asarray(state_dict[name])
                if tuple(value.shape) != tuple(p.shape):
                    raise ValueError(f"load_state_dict: '{name}' has shape {tuple(value.shape)}, "
                                     f"the parameter {tuple(p.shape)}")
                p.value = value
        return {"missing": missing, "unexpected": unexpected}

    def zero_grad(self):
        for p in self.parameters():
            p.zero_grad()

    def train(self, mode=True):
        object.__setattr__(self, "training", mode)
        for child in self._children.values():
            if not isinstance(child, Parameter):
                child.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def __repr__(self):
        lines = [f"{type(self).__name__}("]
        for name, child in self._children.items():
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        return "\n".join(lines) + ")"


class Sequential(Module):
    """Modules applied in order: Sequential(Linear(2, 32), ReLU(), Linear(32, 1))."""

    def __init__(self, *modules):
        super().__init__()
        for i, m in enumerate(modules):
            if not isinstance(m, (Module, _CppModule)):
                raise TypeError(f"Sequential: argument {i} is a {type(m).__name__}, not a module")
            setattr(self, str(i), m)

    def forward(self, x):
        for m in self._children.values():
            x = m(x)
        return x

    def __getitem__(self, i):
        return list(self._children.values())[i]

    def __len__(self):
        return len(self._children)
