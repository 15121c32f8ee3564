"""Ops that exist to be applied in place: item assignment (index_put) and fill (zero_)."""
import numpy as np

from backend.tape import arrays as A
from backend.tape.arrays import unbroadcast
from backend.tape.registry import Op, register


def _index_put(attrs, x, values):
    out = x.copy()
    out[attrs["key"]] = values
    return out


def _index_put_vjp(g, s, node):
    key = node.attrs["key"]
    x_grad = values_grad = None
    if node.needs[0]:
        kept = np.ones(node.shapes[0], dtype=bool)
        kept[key] = False                        # the overwritten elements no longer reach the output
        x_grad = A.where(kept, g)
    if node.needs[1]:
        values_grad = unbroadcast(A.take(g, key), node.shapes[1])
    return x_grad, values_grad


def _index_put_jvp(t, v, attrs):
    """The target's tangent with the written region replaced by the values' tangent (zero where it has none)."""
    out = np.zeros_like(v["out"]) if t[0] is None else np.array(t[0], dtype=v["out"].dtype, copy=True)
    out[attrs["key"]] = 0 if t[1] is None else t[1]
    return out


register(Op(
    "index_put", "movement", ("x", "values"),
    forward=_index_put, vjp=_index_put_vjp, jvp=_index_put_jvp, flops=lambda shapes, out_shape, attrs: 0,
    why="item assignment saves only the index: the written elements take the values' adjoint, the rest pass through.",
))

register(Op(
    "fill", "elementwise", ("x",),
    forward=lambda attrs, x: np.full_like(x, attrs["value"]),
    vjp=lambda g, s, node: (A.zeros(g.shape, g),),
    jvp=lambda t, v, attrs: np.zeros_like(v["out"]),
    flops=lambda shapes, out_shape, attrs: 0,
    why="fill saves nothing: what it overwrote gets no gradient.",
))
