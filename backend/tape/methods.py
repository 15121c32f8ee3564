"""Tensor's operators and methods, each a call into the functional API; in-place ones bump the version."""

from backend.tape import functional as F
from backend.tape.dispatch import apply_inplace
from backend.tape.promotion import inplace_operand
from backend.tape.registry import OPS
from backend.tape.tensor import Tensor


def _reflected(fn):
    return lambda self, other: fn(other, self)      # the number stays weakly typed: promotion sees it as one


def _setitem(self, key, value):
    """`t[key] = value`, recorded as PyTorch's index_put_: the written elements take value's gradient."""
    if isinstance(key, Tensor):
        key = key.data
    apply_inplace(OPS["index_put"], self, (F.as_tensor(value, self),), {"key": key})


def _zero_(self):
    return apply_inplace(OPS["fill"], self, (), {"value": 0})


def _view(self, *shape):
    """reshape that refuses to copy, as torch's view does."""
    shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    try:
        self.data.view().shape = shape
    except AttributeError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.") from None
    return F.reshape(self, shape)


def _inplace(name):
    op = OPS[name]
    if len(op.inputs) == 1:
        return lambda self: apply_inplace(op, self, ())
    return lambda self, other: apply_inplace(op, self, (inplace_operand(self, other),))


METHODS = {
    "__add__": F.add, "__radd__": _reflected(F.add),
    "__sub__": F.sub, "__rsub__": _reflected(F.sub),
    "__mul__": F.mul, "__rmul__": _reflected(F.mul),
    "__truediv__": F.div, "__rtruediv__": _reflected(F.div),
    "__matmul__": F.matmul, "__rmatmul__": _reflected(F.matmul),
    "__neg__": F.neg, "__pow__": F.pow,
    "__getitem__": F.getitem, "__setitem__": _setitem,
    "relu": F.relu, "tanh": F.tanh, "sigmoid": F.sigmoid, "exp": F.exp, "log": F.log, "gelu": F.gelu,
    "sum": F.sum, "mean": F.mean, "max": F.max, "softmax": F.softmax, "log_softmax": F.log_softmax,
    "reshape": F.reshape, "view": _view, "permute": F.permute, "transpose": F.transpose,
    "masked_fill": F.masked_fill,
    "add_": _inplace("add"), "mul_": _inplace("mul"), "relu_": _inplace("relu"), "zero_": _zero_,
}

for method_name, function in METHODS.items():
    setattr(Tensor, method_name, function)

Tensor.T = property(lambda self: F.transpose(self, -2, -1) if self.ndim >= 2 else self)
Tensor.__array_priority__ = 1000
