"""Reductions and softmaxes: sum, mean, max along an axis, softmax, log_softmax.

A full reduction is a 0-d array, never a numpy scalar: numpy's sum and mean return scalars, and the dispatcher
makes every output (registry.run_forward) and tangent an array.
"""
import numpy as np

from backend.tape import arrays as A
from backend.tape.registry import Op, register, size_of


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted(a % ndim for a in axes))


def _spread(g, node):
    """Broadcast a reduced adjoint back over the input's shape (a view: no new bytes)."""
    shape = node.shapes[0]
    if not node.attrs.get("keepdims", False):
        g = A.expand_dims(g, _axes(node.attrs.get("axis"), len(shape)))
    return A.expand(g, shape)


def _reduced_count(node):
    shape = node.shapes[0]
    return size_of([shape[a] for a in _axes(node.attrs.get("axis"), len(shape))])


def _input_size(shapes, out_shape, attrs):
    return size_of(shapes[0])


register(Op(
    "sum", "reduce", ("x",),
    forward=lambda attrs, x: np.sum(x, axis=attrs.get("axis"), keepdims=attrs.get("keepdims", False)),
    vjp=lambda g, s, node: (_spread(g, node),),
    jvp=lambda t, v, attrs: np.sum(t[0], axis=attrs.get("axis"), keepdims=attrs.get("keepdims", False)),
    flops=_input_size, why="sum saves only the input's shape: its vjp broadcasts the adjoint back.",
))

register(Op(
    "mean", "reduce", ("x",),
    forward=lambda attrs, x: np.mean(x, axis=attrs.get("axis"), keepdims=attrs.get("keepdims", False)),
    vjp=lambda g, s, node: (_spread(g / _reduced_count(node), node),),
    jvp=lambda t, v, attrs: np.mean(t[0], axis=attrs.get("axis"), keepdims=attrs.get("keepdims", False)),
    flops=_input_size, why="mean saves only shapes: its vjp spreads the adjoint evenly.",
))


def _max_forward(attrs, x):
    axis, keepdims = attrs["axis"], attrs.get("keepdims", False)
    indices = np.expand_dims(np.argmax(x, axis=axis), axis)
    out = np.take_along_axis(x, indices, axis=axis)
    return (out if keepdims else np.squeeze(out, axis=axis)), {"indices": indices}


def _max_vjp(g, s, node):
    """The adjoint lands on the winner only: spread over the reduced axis, kept where the argmax points."""
    axis = node.attrs["axis"] % len(node.shapes[0])
    if not node.attrs.get("keepdims", False):
        g = A.expand_dims(g, axis)
    positions = np.arange(node.shapes[0][axis]).reshape([-1 if a == axis else 1 for a in range(len(node.shapes[0]))])
    return (A.where(positions == A.constant(s["indices"]), A.expand(g, node.shapes[0])),)


def _max_jvp(t, v, attrs):
    """The winner's tangent: the same argmax the forward took."""
    axis = attrs["axis"]
    picked = np.take_along_axis(t[0], v["indices"], axis=axis)
    return picked if attrs.get("keepdims", False) else np.squeeze(picked, axis=axis)


register(Op(
    "max", "reduce", ("x",), saves={"indices": ("x",)}, extras=("indices",),
    forward=_max_forward, vjp=_max_vjp, jvp=_max_jvp, flops=_input_size,
    why="max saves the argmax indices: only the winning element receives the adjoint.",
))


def _softmax(attrs, x):
    axis = attrs.get("axis", -1)
    shifted = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return shifted / np.sum(shifted, axis=axis, keepdims=True)


def _softmax_vjp(g, s, node):
    p = s["out"]
    return (p * (g - A.sum(g * p, axis=node.attrs.get("axis", -1), keepdims=True)),)


def _softmax_jvp(t, v, attrs):
    p = v["out"]
    return p * (t[0] - np.sum(t[0] * p, axis=attrs.get("axis", -1), keepdims=True))


register(Op(
    "softmax", "reduce", ("x",), saves={"out": ("x",)},
    forward=_softmax, vjp=_softmax_vjp, jvp=_softmax_jvp, flops=lambda shapes, out, attrs: 5 * size_of(out),
    why="softmax saves its output: dz = p ⊙ (dp − ⟨dp, p⟩) needs only p.",
))


def _log_softmax(attrs, x):
    axis = attrs.get("axis", -1)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _log_softmax_vjp(g, s, node):
    axis = node.attrs.get("axis", -1)
    return (g - A.exp(s["out"]) * A.sum(g, axis=axis, keepdims=True),)


def _log_softmax_jvp(t, v, attrs):
    return t[0] - np.sum(np.exp(v["out"]) * t[0], axis=attrs.get("axis", -1), keepdims=True)


register(Op(
    "log_softmax", "reduce", ("x",), saves={"out": ("x",)},
    forward=_log_softmax, vjp=_log_softmax_vjp, jvp=_log_softmax_jvp, flops=lambda shapes, out, attrs: 5 * size_of(out),
    why="log_softmax saves its output: dz = dy − softmax·Σdy, and softmax = exp(output).",
))
