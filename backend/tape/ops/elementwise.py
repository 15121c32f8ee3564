"""Elementwise ops: unary activations and broadcasting binary arithmetic, each beside its vjp and jvp.

A forward may return a numpy scalar (a ufunc on 0-d inputs does): registry.run_forward makes every output an array.
"""
import math

import numpy as np

from backend.tape import arrays as A
from backend.tape.arrays import unbroadcast
from backend.tape.registry import Op, per_element, register, size_of, tangent_sum


def _n(shapes, out_shape, attrs):
    return size_of(out_shape)


# ============================== binary (broadcasting) ==============================

register(Op(
    "add", "binary", ("a", "b"),
    forward=lambda attrs, a, b: a + b,
    vjp=lambda g, s, node: (unbroadcast(g, node.shapes[0]) if node.needs[0] else None,
                            unbroadcast(g, node.shapes[1]) if node.needs[1] else None),
    jvp=lambda t, v, attrs: tangent_sum(t[0], t[1]),
    flops=_n, why="add needs nothing: its vjp passes the adjoint through (summed over broadcast axes).",
))

register(Op(
    "sub", "binary", ("a", "b"),
    forward=lambda attrs, a, b: a - b,
    vjp=lambda g, s, node: (unbroadcast(g, node.shapes[0]) if node.needs[0] else None,
                            -unbroadcast(g, node.shapes[1]) if node.needs[1] else None),
    jvp=lambda t, v, attrs: tangent_sum(t[0], None if t[1] is None else -t[1]),
    flops=_n, why="sub needs nothing: its vjp is ±the adjoint.",
))

register(Op(
    "mul", "binary", ("a", "b"), saves={"a": ("b",), "b": ("a",)},
    forward=lambda attrs, a, b: a * b,
    vjp=lambda g, s, node: (unbroadcast(g * s["b"], node.shapes[0]) if node.needs[0] else None,
                            unbroadcast(g * s["a"], node.shapes[1]) if node.needs[1] else None),
    jvp=lambda t, v, attrs: tangent_sum(None if t[0] is None else t[0] * v["b"],
                                        None if t[1] is None else v["a"] * t[1]),
    flops=_n, why="mul saves both inputs: da = dy·b needs b and db = dy·a needs a.",
))


def _div_vjp(g, s, node):
    a_grad = unbroadcast(g / s["b"], node.shapes[0]) if node.needs[0] else None
    b_grad = unbroadcast(-g * s["a"] / (s["b"] * s["b"]), node.shapes[1]) if node.needs[1] else None
    return a_grad, b_grad


def _div_jvp(t, v, attrs):
    """d(a/b) = da/b − (a/b)·db/b."""
    return tangent_sum(None if t[0] is None else t[0] / v["b"],
                       None if t[1] is None else -v["out"] * t[1] / v["b"])


register(Op(
    "div", "binary", ("a", "b"), saves={"a": ("b",), "b": ("a", "b")},
    forward=lambda attrs, a, b: a / b, vjp=_div_vjp, jvp=_div_jvp, flops=_n,
    why="div saves b for both gradients (da = dy/b) and a for db = −dy·a/b².",
))

register(Op(
    "neg", "elementwise", ("x",),
    forward=lambda attrs, x: -x,
    vjp=lambda g, s, node: (-g,),
    jvp=lambda t, v, attrs: -t[0],
    flops=_n, why="neg needs nothing.",
))


def _power(x, exponent):
    """x ** exponent as PyTorch computes it: like numpy (x ** 0.5 is sqrt), except x ** −0.5 is rsqrt, so that
    (−0.0) ** −0.5 = −inf where C's pow gives +inf. An array even on 0-d inputs: pow's vjp and jvp multiply by it."""
    if exponent == -0.5:
        return np.asarray(1 / np.sqrt(x))
    return np.asarray(x ** exponent)


def _pow_vjp(g, s, node):
    exponent = node.attrs["exponent"]
    if exponent == 0:
        # PyTorch's pow_backward: zeros, not 0·x⁻¹ (which is NaN at x = 0).
        return (A.zeros(node.shapes[0], g),)
    return (g * (exponent * A.power(s["x"], exponent - 1, _pow_forward)),)


def _pow_jvp(t, v, attrs):
    exponent = attrs["exponent"]
    if exponent == 0:
        return np.zeros_like(t[0])
    return t[0] * (exponent * _power(v["x"], exponent - 1))


def _pow_forward(attrs, x):
    return _power(x, attrs["exponent"])


register(Op(
    "pow", "elementwise", ("x",), saves={"x": ("x",)},
    forward=_pow_forward,
    vjp=_pow_vjp, jvp=_pow_jvp, flops=per_element(2), why="pow saves its input: d(xᵖ) = p·xᵖ⁻¹ needs x.",
))

# ============================== unary activations ==============================

register(Op(
    "exp", "elementwise", ("x",), saves={"out": ("x",)},
    forward=lambda attrs, x: np.exp(x),
    vjp=lambda g, s, node: (g * s["out"],),
    jvp=lambda t, v, attrs: t[0] * v["out"],
    flops=_n, why="exp saves its output: d(eˣ) = eˣ is the output itself.",
))

register(Op(
    "log", "elementwise", ("x",), saves={"x": ("x",)},
    forward=lambda attrs, x: np.log(x),
    vjp=lambda g, s, node: (g / s["x"],),
    jvp=lambda t, v, attrs: t[0] / v["x"],
    flops=_n, why="log saves its input: d(log x) = 1/x.",
))

register(Op(
    "tanh", "elementwise", ("x",), saves={"out": ("x",)},
    forward=lambda attrs, x: np.tanh(x),
    vjp=lambda g, s, node: (A.in_float32(lambda g, y: g * (1 - y * y), g, s["out"]),),
    jvp=lambda t, v, attrs: t[0] * (1 - v["out"] * v["out"]),
    flops=_n, why="tanh saves its output: d(tanh) = 1 − y².",
))


def _sigmoid(attrs, x):
    return A.in_float32(lambda x: (1 / (1 + np.exp(-x))).astype(x.dtype, copy=False), x)


register(Op(
    "sigmoid", "elementwise", ("x",), saves={"out": ("x",)},
    forward=_sigmoid,
    vjp=lambda g, s, node: (A.in_float32(lambda g, y: g * (1 - y) * y, g, s["out"], float16=False),),
    jvp=lambda t, v, attrs: t[0] * v["out"] * (1 - v["out"]),
    flops=per_element(3), why="sigmoid saves its output: dσ = σ(1 − σ).",
))

def _relu_vjp(g, s, node):
    """The adjoint where the output is positive, 0 elsewhere. Under create_graph this is the relu_backward op
    (torch's threshold_backward), a function of the adjoint and of the output with slope 0 in the output: the
    gradient of a relu-gated program keeps a history, whose second derivative is exactly zero, as in torch."""
    return (A.relu_backward(g, s["out"]),)


register(Op(
    "relu", "elementwise", ("x",), saves={"out": ("x",)},
    forward=lambda attrs, x: np.maximum(x, 0),
    vjp=_relu_vjp,
    jvp=lambda t, v, attrs: np.where(v["out"] > 0, t[0], np.zeros((), dtype=t[0].dtype)),
    flops=_n, why="relu saves its output: the gate y > 0 is read off the output.",
))


def _relu_backward_vjp(gg, s, node):
    """The adjoint's gradient is gated like the adjoint; the output's is zero (the gate is flat), not None: a
    second sweep reaches the output and what made it, as torch's ThresholdBackwardBackward sends zeros."""
    return (A.where(A.constant(s["result"]) > 0, gg) if node.needs[0] else None,
            A.zeros(node.shapes[1], gg) if node.needs[1] else None)


register(Op(
    "relu_backward", "elementwise", ("grad", "result"), saves={"result": ("grad",)},
    forward=lambda attrs, grad, result: A.where(result > 0, grad),
    vjp=_relu_backward_vjp,
    jvp=lambda t, v, attrs: (np.zeros_like(v["out"]) if t[0] is None
                             else np.where(v["result"] > 0, t[0], np.zeros((), dtype=t[0].dtype))),
    flops=_n, why="relu's vjp, recorded under create_graph, saves relu's output: the gate y > 0 is read off it.",
))

_GELU_C = math.sqrt(2.0 / math.pi)


def _gelu(attrs, x):
    inner = _GELU_C * (x + 0.044715 * x ** 3)
    return 0.5 * x * (1 + np.tanh(inner))


def _gelu_slope(x):
    t = A.tanh(_GELU_C * (x + 0.044715 * x ** 3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _GELU_C * (1 + 3 * 0.044715 * x * x)


def _gelu_vjp(g, s, node):
    return (g * _gelu_slope(s["x"]),)


register(Op(
    "gelu", "elementwise", ("x",), saves={"x": ("x",)},
    forward=_gelu, vjp=_gelu_vjp, jvp=lambda t, v, attrs: t[0] * _gelu_slope(v["x"]), flops=per_element(8),
    why="gelu saves its input: its slope Φ-like term is recomputed from x.",
))
