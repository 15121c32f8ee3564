"""The functional API, named as in torch.nn.functional: each function is one op from the registry or a composite of them."""
import math

import numpy as np

from backend.tape import amp
from backend.tape import random as tape_random
from backend.tape.dispatch import apply
from backend.tape.ops.nn import REDUCTIONS
from backend.tape.promotion import DEFAULT_FLOAT, FLOATING, binary_operands, category, operand_as
from backend.tape.registry import OPS
from backend.tape.tensor import Tensor, constant_leaf


def as_tensor(value, like):
    """A Python number or array used as an operand: a constant leaf in the other operand's dtype."""
    if isinstance(value, Tensor):
        return value
    return constant_leaf(np.asarray(value, dtype=like.data.dtype))


def _unary(name):
    op = OPS[name]
    return lambda x: apply(op, (x,))


relu = _unary("relu")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
exp = _unary("exp")
log = _unary("log")
neg = _unary("neg")


def cast(x, dtype):
    """x in another floating dtype ("float16", "bfloat16", "float32", ...): torch's x.to(dtype)."""
    from backend.tape.ops.precision import dtype_named
    target = dtype_named(dtype) if isinstance(dtype, str) else np.dtype(dtype)
    return apply(OPS["cast"], (x,), {"dtype": target.name, "source": x.data.dtype.name})


def gelu(x, approximate="tanh"):
    if approximate != "tanh":
        raise ValueError("only the tanh form of gelu is implemented: pass approximate='tanh'")
    return apply(OPS["gelu"], (x,))


def add(a, b):
    return apply(OPS["add"], binary_operands(OPS["add"], a, b))


def sub(a, b):
    return apply(OPS["sub"], binary_operands(OPS["sub"], a, b))


def mul(a, b):
    return apply(OPS["mul"], binary_operands(OPS["mul"], a, b))


def div(a, b):
    """True division: integer operands divide in the default float dtype, as torch's does."""
    a, b = binary_operands(OPS["div"], a, b)
    if category(a.data.dtype) != FLOATING:
        a, b = operand_as(a, DEFAULT_FLOAT), operand_as(b, DEFAULT_FLOAT)
    return apply(OPS["div"], (a, b))


def pow(x, exponent):   # noqa: A001 - torch's name
    if isinstance(exponent, Tensor):
        raise TypeError("pow takes a scalar exponent")
    if isinstance(exponent, np.generic):
        exponent = exponent.item()      # a Python number is weakly typed: float32 ** 2.0 stays float32
    return apply(OPS["pow"], (x,), {"exponent": exponent})


def matmul(a, b):
    """a @ b. matmul does not promote: mixed dtypes are refused, as in torch (autocast casts both first)."""
    if not amp.active and a.data.dtype != b.data.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_c_name(a.data.dtype)} != "
                           f"{_c_name(b.data.dtype)}")
    return apply(OPS["matmul"], (a, b))


def _c_name(dtype):
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int"}.get(dtype.name, dtype.name)


def sum(x, axis=None, keepdims=False):  # noqa: A001
    return apply(OPS["sum"], (x,), {"axis": _axis(axis), "keepdims": keepdims})


def mean(x, axis=None, keepdims=False):
    return apply(OPS["mean"], (x,), {"axis": _axis(axis), "keepdims": keepdims})


def max(x, axis, keepdims=False):   # noqa: A001
    return apply(OPS["max"], (x,), {"axis": axis, "keepdims": keepdims})


def softmax(x, dim=-1):
    return apply(OPS["softmax"], (x,), {"axis": dim})


def log_softmax(x, dim=-1):
    return apply(OPS["log_softmax"], (x,), {"axis": dim})


def reshape(x, *shape):
    shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    return apply(OPS["reshape"], (x,), {"shape": shape})


def permute(x, *axes):
    axes = tuple(axes[0]) if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes
    return apply(OPS["permute"], (x,), {"axes": tuple(a % x.ndim for a in axes)})


def transpose(x, dim0=-2, dim1=-1):
    axes = list(range(x.ndim))
    axes[dim0], axes[dim1] = axes[dim1], axes[dim0]
    return permute(x, axes)


def getitem(x, key):
    if isinstance(key, Tensor):
        key = key.data
    for part in key if isinstance(key, tuple) else (key,):
        if isinstance(part, slice) and part.step is not None and part.step <= 0:
            raise ValueError("step must be greater than zero")          # torch has no negative-stride views
    return apply(OPS["getitem"], (x,), {"key": key})


def cat(tensors, dim=0):
    return apply(OPS["concat"], tuple(tensors), {"axis": dim})


def masked_fill(x, mask, value):
    return apply(OPS["masked_fill"], (x, mask), {"value": float(value)})


def dropout(x, p=0.5, training=True):
    if not training or p == 0:
        return x
    if not 0 <= p < 1:
        raise ValueError(f"dropout probability has to be in [0, 1), but got {p}")
    return apply(OPS["dropout"], (x,), {"p": p})


def embedding(indices, weight):
    return apply(OPS["embedding"], (indices, weight))


def layer_norm(x, weight, bias, eps=1e-5):
    return apply(OPS["layernorm"], (x, weight, bias), {"eps": eps})


def rms_norm(x, weight, eps=1e-6):
    return apply(OPS["rmsnorm"], (x, weight), {"eps": eps})


def cross_entropy(logits, target, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    """Cross-entropy from logits [N, C] (or [..., C], or [C]) and integer targets, with the fused p − y backward.

    As torch.nn.functional.cross_entropy: rows whose target is `ignore_index` add nothing and "mean" divides by
    the rows that remain; `label_smoothing` ε mixes the one-hot target with the uniform distribution,
    y = (1 − ε)·onehot + ε/C. The class axis is the last one (torch's is axis 1 for [N, C, d1, ...]).
    """
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if not isinstance(target, Tensor):
        target = Tensor.allocate(np.asarray(target, dtype=np.int64), "input", name="target")
    target_shape = target.shape
    if logits.ndim != 2:
        logits = reshape(logits, (-1, logits.shape[-1]))
    if target.ndim != 1:
        target = reshape(target, (-1,))
    attrs = {"ignore_index": int(ignore_index), "label_smoothing": float(label_smoothing), "reduction": reduction}
    loss = apply(OPS["cross_entropy"], (logits, target), attrs)
    if reduction == "none" and loss.shape != target_shape:
        loss = reshape(loss, target_shape)        # one loss per target, in the target's shape
    return loss


def mse_loss(prediction, target):
    diff = sub(prediction, target)
    return mean(mul(diff, diff))


def scaled_dot_product_attention(q, k, v, is_causal=False, dropout_p=0.0):
    """Fused ("efficient") attention over [..., seq, dim]: saves q, k, v, output and per-row log-sum-exp."""
    attrs = {"causal": bool(is_causal), "scale": 1.0 / math.sqrt(q.shape[-1]), "dropout_p": float(dropout_p),
             "rng_state": tape_random.get_rng_state() if dropout_p > 0 else None}
    return apply(OPS["attention"], (q, k, v), attrs)


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis
