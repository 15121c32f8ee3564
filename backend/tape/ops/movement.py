"""Movement ops: reshape, transpose/permute, indexing and concat. Views share their input's storage.

Each is linear, so its jvp is its own forward applied to the tangent (`_linear` registers the one-input ones so).
"""
import numpy as np

from backend.tape import arrays as A
from backend.tape.registry import Op, register, size_of


def _free(shapes, out_shape, attrs):
    return 0


def _linear(name, forward, vjp, why, view=True, flops=_free):
    """Register a one-input movement op: linear, so its jvp is `forward` applied to the tangent."""
    return register(Op(name, "movement", ("x",), view=view, forward=forward, vjp=vjp,
                       jvp=lambda t, v, attrs: forward(attrs, t[0]), flops=flops, why=why))


_linear("reshape", lambda attrs, x: np.reshape(x, attrs["shape"]),
        vjp=lambda g, s, node: (A.reshape(g, node.shapes[0]),),
        why="reshape saves only the shape: a view, no bytes.")

_linear("permute", lambda attrs, x: np.transpose(x, attrs["axes"]),
        vjp=lambda g, s, node: (A.permute(g, np.argsort(node.attrs["axes"])),),
        why="permute saves only the axis order: a view, no bytes.")


def _getitem_vjp(g, s, node):
    return (A.scatter_add(g, node.attrs["key"], node.shapes[0]),)     # add, not =: an index may repeat


def _getitem(attrs, x):
    key = attrs["key"]
    out = x[key]
    if type(out) is not np.ndarray:
        # Every axis taken by an integer: numpy returns a scalar copy, PyTorch a 0-d view. A trailing
        # Ellipsis makes numpy return the 0-d view too.
        out = x[(*key, Ellipsis) if isinstance(key, tuple) else (key, Ellipsis)]
    return out


_linear("getitem", _getitem, vjp=_getitem_vjp,
        why="indexing saves only the index and shape: its vjp scatters the adjoint back.")


def _concat_vjp(g, s, node):
    axis = node.attrs["axis"]
    bounds = np.cumsum([shape[axis] for shape in node.shapes])[:-1]
    return tuple(A.split(g, bounds, axis=axis))


def _concat_jvp(t, v, attrs):
    parts = [np.zeros_like(x) if tangent is None else tangent for tangent, x in zip(t, v["xs"])]
    return np.concatenate(parts, axis=attrs["axis"])


register(Op(
    "concat", "movement", ("xs",), variadic=True,
    forward=lambda attrs, *xs: np.concatenate(xs, axis=attrs["axis"]),
    vjp=_concat_vjp, jvp=_concat_jvp, flops=_free,
    why="concat saves only the sizes: its vjp splits the adjoint.",
))


# ============================== the adjoints' own movement (double backward) ==============================

_linear("expand", lambda attrs, x: np.broadcast_to(x, attrs["shape"]),
        vjp=lambda g, s, node: (A.unbroadcast(g, node.shapes[0]),),
        why="expand saves only the shape: a broadcast view, no bytes; its vjp sums back.")


def _scatter_add(attrs, x):
    out = np.zeros(attrs["shape"], dtype=x.dtype)
    np.add.at(out, attrs["key"], x)
    return out


_linear("scatter_add", _scatter_add, vjp=lambda g, s, node: (A.take(g, node.attrs["key"]),), view=False,
        flops=lambda shapes, out_shape, attrs: size_of(shapes[0]),
        why="scatter_add (an indexing op's adjoint) saves only the index: its vjp gathers.")
