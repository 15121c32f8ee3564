"""Movement ops: reshape, transpose/permute, indexing and concat. Views share their input's storage.

Each is linear, so its jvp is its own forward applied to the tangent.
"""
import numpy as np

from backend.tape.registry import Op, register


def _free(shapes, out_shape, attrs):
    return 0


register(Op(
    "reshape", "movement", ("x",), view=True,
    forward=lambda attrs, x: np.reshape(x, attrs["shape"]),
    vjp=lambda g, s, node: (np.reshape(g, node.shapes[0]),),
    jvp=lambda t, v, attrs: np.reshape(t[0], attrs["shape"]),
    flops=_free, why="reshape saves only the shape: a view, no bytes.",
))

register(Op(
    "permute", "movement", ("x",), view=True,
    forward=lambda attrs, x: np.transpose(x, attrs["axes"]),
    vjp=lambda g, s, node: (np.transpose(g, np.argsort(node.attrs["axes"])),),
    jvp=lambda t, v, attrs: np.transpose(t[0], attrs["axes"]),
    flops=_free, why="permute saves only the axis order: a view, no bytes.",
))


def _getitem_vjp(g, s, node):
    grad = np.zeros(node.shapes[0], dtype=g.dtype)
    np.add.at(grad, node.attrs["key"], g)   # add.at, not =: an index may repeat
    return (grad,)


def _getitem(attrs, x):
    key = attrs["key"]
    out = x[key]
    if type(out) is not np.ndarray:
        # Every axis taken by an integer: numpy returns a scalar copy, PyTorch a 0-d view. A trailing
        # Ellipsis makes numpy return the 0-d view too.
        out = x[(*key, Ellipsis) if isinstance(key, tuple) else (key, Ellipsis)]
    return out


register(Op(
    "getitem", "movement", ("x",), view=True,
    forward=_getitem,
    vjp=_getitem_vjp, jvp=lambda t, v, attrs: _getitem(attrs, t[0]), flops=_free,
    why="indexing saves only the index and shape: its vjp scatters the adjoint back.",
))


def _concat_vjp(g, s, node):
    axis = node.attrs["axis"]
    bounds = np.cumsum([shape[axis] for shape in node.shapes])[:-1]
    return tuple(np.split(g, bounds, axis=axis))


def _concat_jvp(t, v, attrs):
    parts = [np.zeros_like(x) if tangent is None else tangent for tangent, x in zip(t, v["xs"])]
    return np.concatenate(parts, axis=attrs["axis"])


register(Op(
    "concat", "movement", ("xs",), variadic=True,
    forward=lambda attrs, *xs: np.concatenate(xs, axis=attrs["axis"]),
    vjp=_concat_vjp, jvp=_concat_jvp, flops=_free,
    why="concat saves only the sizes: its vjp splits the adjoint.",
))
