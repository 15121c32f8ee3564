"""Ops that exist to be applied in place: item assignment (index_put) and fill (zero_)."""
import numpy as np

from backend.tape.registry import Op, register, unbroadcast


def _index_put(attrs, x, values):
    out = x.copy()
    out[attrs["key"]] = values
    return out


def _index_put_vjp(g, s, node):
    key = node.attrs["key"]
    x_grad = values_grad = None
    if node.needs[0]:
        x_grad = np.array(g, copy=True)
        x_grad[key] = 0                          # the overwritten elements no longer reach the output
    if node.needs[1]:
        values_grad = unbroadcast(np.asarray(g[key]), node.shapes[1])
    return x_grad, values_grad


register(Op(
    "index_put", "movement", ("x", "values"),
    forward=_index_put, vjp=_index_put_vjp, flops=lambda shapes, out_shape, attrs: 0,
    why="item assignment saves only the index: the written elements take the values' adjoint, the rest pass through.",
))

register(Op(
    "fill", "elementwise", ("x",),
    forward=lambda attrs, x: np.full_like(x, attrs["value"]),
    vjp=lambda g, s, node: (np.zeros_like(g),),
    flops=lambda shapes, out_shape, attrs: 0,
    why="fill saves nothing: what it overwrote gets no gradient.",
))
