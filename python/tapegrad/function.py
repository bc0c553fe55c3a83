"""tapegrad.Function: an op written in Python with its own backward, as torch.autograd.Function.

    class Cube(tg.Function):
        @staticmethod
        def forward(ctx, x):               # numpy arrays in (copies of the Vars' values) ...
            ctx.save_for_backward(x)
            return x ** 3                  # ... and a numpy array out
        @staticmethod
        def backward(ctx, grad):           # d loss / d output
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * grad       # one gradient per input of forward (None: no gradient)

    y = Cube.apply(x)                      # x a Var (or Var64): y a Var on x's tape

Arguments that are not Vars reach forward as they are and get no gradient. The gradients must have
their inputs' shapes and convert to the tape's type without loss (float64 arrays into a float32
tape are an error, as everywhere). tg.gradcheck checks a Function's backward like any op's.
"""
from ._tapegrad import Var, Var64, _apply_function, _apply_function64


class FunctionCtx:
    """What forward hands backward: save_for_backward(*arrays) -> saved_tensors, or any attribute."""

    def save_for_backward(self, *arrays):
        self.saved_tensors = arrays


class Function:
    @staticmethod
    def forward(ctx, *inputs):
        raise NotImplementedError("a Function defines forward(ctx, *inputs)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a Function defines backward(ctx, grad_output)")

    @classmethod
    def apply(cls, *inputs):
        ctx = FunctionCtx()
        if any(isinstance(a, Var64) for a in inputs):
            return _apply_function64(cls, ctx, inputs)
        return _apply_function(cls, ctx, inputs)


__all__ = ["Function", "FunctionCtx", "Var"]
