"""The array namespace the vjps are written in: numpy on arrays, tape ops on Tensors, one definition per rule.

On the plain backward path every value a vjp sees is an ndarray, and each function here is the numpy call it
names (one type check, no recording). Under create_graph (and inside a forward-over-reverse sweep) the
adjoint and the saved values are Tensors, and the same function applies the registry's op instead, so the
vjp's own arithmetic lands on the tape and can be differentiated again. Arithmetic operators (+ − * / @ and
unary −) need nothing from here: ndarray and Tensor both have them.

Masks, indices and gates are never differentiated: `constant` reads a value's array whichever it is.
"""
import numpy as np

from backend.tape.tensor import Tensor, constant_leaf


def _apply(name, inputs, attrs):
    from backend.tape.dispatch import apply       # dispatch imports the ops that import this module
    from backend.tape.registry import OPS
    return apply(OPS[name], inputs, attrs)


def constant(x):
    """The values of `x` as an ndarray: for masks, gates and indices, which carry no gradient."""
    return x.data if isinstance(x, Tensor) else x


def like(array, reference):
    """`array` as a value of `reference`'s kind: a constant Tensor beside a Tensor, the array itself otherwise."""
    if isinstance(reference, Tensor) and not isinstance(array, Tensor):
        return constant_leaf(np.asarray(array))
    return array


def sum(x, axis=None, keepdims=False):    # noqa: A001 - numpy's name
    if isinstance(x, Tensor):
        return _apply("sum", (x,), {"axis": axis, "keepdims": keepdims})
    total = x.sum(axis=axis, keepdims=keepdims)
    return total if type(total) is np.ndarray else np.asarray(total)     # a full sum: 0-d, not a numpy scalar


def exp(x):
    return _apply("exp", (x,), {}) if isinstance(x, Tensor) else np.exp(x)


def tanh(x):
    return _apply("tanh", (x,), {}) if isinstance(x, Tensor) else np.tanh(x)


def reshape(x, shape):
    if isinstance(x, Tensor):
        return _apply("reshape", (x,), {"shape": tuple(shape)})
    return x.reshape(shape)


def permute(x, axes):
    axes = tuple(int(a) for a in axes)
    return _apply("permute", (x,), {"axes": axes}) if isinstance(x, Tensor) else np.transpose(x, axes)


def swapaxes(x):
    """The last two axes exchanged (a matrix transpose, batched)."""
    if isinstance(x, Tensor):
        axes = list(range(x.ndim))
        axes[-1], axes[-2] = axes[-2], axes[-1]
        return permute(x, axes)
    return x.swapaxes(-1, -2)


def expand_dims(x, axes):
    """Unit axes inserted at `axes` (positions in the result), as numpy's expand_dims."""
    if isinstance(x, Tensor):
        return reshape(x, np.expand_dims(np.empty(x.shape, dtype=bool), axes).shape)
    return np.expand_dims(x, axes)


def expand(x, shape):
    """`x` broadcast to `shape` (a tuple) without copying (a view): the adjoint of a sum."""
    if isinstance(x, Tensor):
        return x if x.shape == shape else _apply("expand", (x,), {"shape": shape})
    return np.broadcast_to(x, shape)


def astype(x, dtype):
    """`x` as `dtype` (a numpy dtype): the cast op on a Tensor (recorded: its vjp casts back), numpy's astype
    (no copy when it already is) on an array."""
    if isinstance(x, Tensor):
        if x.dtype == dtype:
            return x
        return _apply("cast", (x,), {"dtype": np.dtype(dtype).name, "source": x.data.dtype.name})
    return np.asarray(x).astype(dtype, copy=False)


def unbroadcast(grad, shape):
    """Sum a broadcast gradient back down to `shape` (a tuple): every binary op's vjp ends here."""
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra:
        grad = sum(grad, axis=tuple(range(extra)))
    squeezed = tuple(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)
    if squeezed:
        grad = sum(grad, axis=squeezed, keepdims=True)
    return grad


def where(condition, x):
    """`x` where `condition` (a bool array) holds and 0 elsewhere: a select, as torch's threshold_backward is.

    On arrays, multiplying by the condition is the same select and twice as fast, except that an infinite
    value behind a false condition gives inf·0 = NaN; a NaN in the product sends it to the exact select.
    """
    if isinstance(condition, Tensor):
        condition = condition.data
    if isinstance(x, Tensor):
        return _apply("masked_fill", (x, Tensor.allocate(~condition, "input", name="mask")), {"value": 0.0})
    selected = x * condition
    if np.isnan(selected.sum()):
        selected = np.where(condition, x, np.zeros((), dtype=x.dtype))
    return selected


def in_float32(fn, *arrays, float16=True):
    """`fn(*arrays)` computed in float32 and rounded once to the arrays' dtype when that is bfloat16 (or float16,
    unless `float16=False`), as torch's CPU kernels compute in float32 ("opmath") and round once, where numpy's
    low-precision arithmetic rounds after every operation. torch's CPU sigmoid_backward is the exception that
    computes float16 in float16 (float16=False). Tensors (create_graph) and float32 or float64 arrays are left
    to `fn` as they are."""
    if any(isinstance(a, Tensor) for a in arrays):
        return fn(*arrays)
    dtype = arrays[0].dtype
    if dtype.itemsize > 2 or dtype.kind not in "fV" or (dtype == np.float16 and not float16):
        return fn(*arrays)
    return np.asarray(fn(*(np.asarray(a, dtype=np.float32) for a in arrays))).astype(dtype)


def relu_backward(grad, result):
    """`grad` where relu's `result` is positive, 0 elsewhere. On Tensors it is the relu_backward op, which
    depends on `result` (with slope 0), as torch's threshold_backward does: a relu-gated gradient keeps a history."""
    if isinstance(grad, Tensor) or isinstance(result, Tensor):
        return _apply("relu_backward", (like(grad, result), like(result, grad)), {})
    return where(result > 0, grad)


def take(x, key):
    """`x[key]` (any numpy index): a gather."""
    if isinstance(x, Tensor):
        return _apply("getitem", (x,), {"key": key})
    return np.asarray(x[key])


def scatter_add(x, key, shape):
    """A zero array of `shape` with `x` added at `key` (repeated indices add up): the adjoint of a gather."""
    if isinstance(x, Tensor):
        return _apply("scatter_add", (x,), {"key": key, "shape": tuple(shape)})
    out = np.zeros(shape, dtype=x.dtype)
    np.add.at(out, key, x)
    return out


def split(x, bounds, axis):
    """`x` cut along `axis` at `bounds`, as numpy's split."""
    if not isinstance(x, Tensor):
        return np.split(x, bounds, axis=axis)
    edges = [0, *[int(b) for b in bounds], x.shape[axis]]
    lead = (slice(None),) * (axis % x.ndim)
    return [take(x, (*lead, slice(start, stop))) for start, stop in zip(edges[:-1], edges[1:])]


def zeros(shape, reference):
    """Zeros of `shape` in `reference`'s dtype (a constant: no gradient flows through a zero)."""
    return like(np.zeros(shape, dtype=reference.dtype), reference)


def power(x, exponent, forward):
    """x ** exponent by the pow op's own forward (`forward(attrs, x)`), recorded when x is a Tensor."""
    if isinstance(x, Tensor):
        return _apply("pow", (x,), {"exponent": exponent})
    return forward({"exponent": exponent}, x)
