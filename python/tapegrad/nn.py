"""tapegrad.nn: the engine's modules, and Module / Sequential for models of your own.

The C++ modules (Linear, LayerNorm, RMSNorm, CausalSelfAttention, MLP, Embedding, Dropout, the
activations, and any registered norm by name through norm()) are called on a Var and record on
its tape. Module is the base for a model written in Python: its attributes that are modules or
parameters are its children, found in assignment order, so parameters(), named_parameters(),
state_dict(), load_state_dict(), train() and eval() work as in torch.

Hooks, as torch's, on any module (C++ or Python): register_forward_hook(hook(module, input,
output)) runs after each call, input a tuple; register_full_backward_pre_hook(hook(module,
grad_output)) runs when the backward pass reaches the module's output, grad_output a tuple of
numpy arrays. Both return a handle whose remove() takes the hook off; a hook returns None.
named_modules() / get_submodule("blocks.1.norm2") reach a module inside a model.
"""
import types
from collections import OrderedDict

import numpy as np

from ._tapegrad import Error, Parameter
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
    hooks_per_worker,
    load_plugin,
    manual_seed,
    norm,
    norm_names,
)
from ._tapegrad._nn import HookHandle  # noqa: F401
from ._tapegrad._nn import Module as _CppModule
from ._tapegrad._nn import _backward_pre_hook_node, _load_into_parameters, _register_python_norm
from ._tapegrad._nn import layer_norm as _layer_norm
from ._tapegrad._nn import rms_norm as _rms_norm
from ._tapegrad.lm import Decoder, LanguageModel  # noqa: F401


# torch.nn.functional's place: the fused norms as functions (one tape node each), for a norm of
# your own built around them (tg.nn.functional.rms_norm(x, weight=w)).
functional = types.SimpleNamespace(layer_norm=_layer_norm, rms_norm=_rms_norm)


class Module:
    """A model of your own: assign modules and Parameters as attributes, write forward()."""

    def __init__(self):
        object.__setattr__(self, "_children", OrderedDict())
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_backward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_next_hook", 0)

    def __setattr__(self, name, value):
        if "_children" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}: call super().__init__() before assigning attributes")
        if isinstance(value, (Module, _CppModule, Parameter)):
            self._children[name] = value
        object.__setattr__(self, name, value)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        out = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            _check_hook_result(hook(self, args, out), "a forward hook")
        if self._backward_pre_hooks:
            hooks = list(self._backward_pre_hooks.values())

            def call(grad_output):
                for hook in hooks:
                    _check_hook_result(hook(self, grad_output), "a backward hook")

            out = _backward_pre_hook_node(out, call)
        return out

    def register_forward_hook(self, hook):
        """hook(module, input, output) after each call; input is the tuple of forward's arguments."""
        return self._add_hook(self._forward_hooks, hook)

    def register_full_backward_pre_hook(self, hook):
        """hook(module, grad_output) when the backward pass reaches this module's output (a Var)."""
        return self._add_hook(self._backward_pre_hooks, hook)

    def _add_hook(self, hooks, hook):
        if not callable(hook):
            raise TypeError(f"register hook: {type(hook).__name__} is not callable")
        object.__setattr__(self, "_next_hook", self._next_hook + 1)
        hooks[self._next_hook] = hook
        return _PyHookHandle(hooks, self._next_hook)

    def named_modules(self, prefix=""):
        """[(dotted path, module)] for this module ("") and every descendant, depth-first."""
        _check_prefix(prefix, "named_modules")
        out = [(prefix, self)]
        for name, child in self._children.items():
            if isinstance(child, Parameter):
                continue
            path = prefix + "." + name if prefix else name
            if isinstance(child, Module):
                out += child.named_modules(path)
            else:
                out += [(path + "." + n if n else path, m) for n, m in child.named_modules()]
        return out

    def modules(self):
        return [m for _, m in self.named_modules()]

    def get_submodule(self, path):
        """The module at this dotted path ("blocks.1.norm2")."""
        if not isinstance(path, str):
            raise TypeError(f"get_submodule: path is a dotted name (str), got {type(path).__name__}")
        found = dict(self.named_modules())
        if path not in found:
            known = ", ".join(n for n in found if n)
            has = f"it has: {known}" if known else "it has no submodules"
            raise AttributeError(f"get_submodule: {type(self).__name__} has no module '{path}'; {has}")
        return found[path]

    def named_parameters(self, prefix=""):
        """[(dotted name, parameter)], each parameter once under its first name (torch's default):
        a module used twice (shared weights) is stepped once per update, not twice."""
        _check_prefix(prefix, "named_parameters")
        out, seen = [], set()
        for name, child in self._children.items():
            found = [(prefix + name, child)] if isinstance(child, Parameter) else \
                [(prefix + name + "." + n, p) for n, p in child.named_parameters()]
            for n, p in found:  # `out` keeps each wrapper alive, so one C++ parameter has one id here
                if id(p) not in seen:
                    seen.add(id(p))
                    out.append((n, p))
        return out

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def num_parameters(self):
        return sum(p.numel() for p in self.parameters())

    def state_dict(self):
        """Every parameter's value by dotted name: numpy views of the parameters' memory (as torch's)."""
        return OrderedDict((n, p.value) for n, p in self.named_parameters())

    def load_state_dict(self, state_dict, strict=True):
        """Copies a state dict (names to arrays) into the parameters, as a C++ module's does: the
        whole dict is checked first (missing, unexpected and mis-shaped keys are one tapegrad.Error
        under strict=True), then written; returns the LoadReport (missing, unexpected)."""
        return _load_into_parameters(self.named_parameters(), state_dict, strict, type(self).__name__)

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


class _PyHookHandle:
    """A Python module's hook handle: remove() takes the hook off (again: nothing)."""

    def __init__(self, hooks, id):
        self._hooks, self.id = hooks, id

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _check_hook_result(result, what):
    if result is not None:
        raise Error(f"{what} returned {type(result).__name__}; a hook must return None "
                           "(tapegrad cannot replace a module's output or gradient from a hook)")


def _check_prefix(prefix, who):
    if not isinstance(prefix, str):
        raise TypeError(f"{who}: prefix is the dotted name put before each name (str), got {type(prefix).__name__}")


def register_norm(name, cls, label=None, description=None):
    """Registers a norm written in Python, a tapegrad.nn.Module subclass built as cls(dim, eps=eps),
    under `name`: TrainConfig(norm=name), tapegrad.lab sweeps and checkpoints (resumed in a process
    that registered it) then know it, as a C++ norm registered with nn::register_norm. Inside the
    trainer its parameters are the model's (the module's Parameter attributes are rebound to them);
    its forward runs in Python with the GIL, once per worker thread's share of the batch. Float32
    only: a float64 copy of the model (sharpness measurements) needs a C++ norm."""
    if not (isinstance(cls, type) and issubclass(cls, Module)):
        what = cls.__name__ if isinstance(cls, type) else f"a {type(cls).__name__} (an instance, not a class)"
        raise TypeError(f"register_norm: {what} is not a tapegrad.nn.Module subclass")
    doc = (cls.__doc__ or "").strip().splitlines()
    _register_python_norm(name, cls, label or cls.__name__,
                          description or (doc[0] if doc else f"a norm written in Python ({cls.__name__})"))
