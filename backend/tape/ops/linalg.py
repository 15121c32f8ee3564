"""Matrix multiply, 2-D and batched: the op that pins both of its inputs."""
import numpy as np

from backend.tape.registry import Op, register, size_of, unbroadcast


def _swap(x):
    return np.swapaxes(x, -1, -2)


def _matmul_vjp(g, s, node):
    a_shape, b_shape = node.shapes
    a_grad = b_grad = None
    if node.needs[0]:
        a_grad = unbroadcast(g @ _swap(s["b"]), a_shape)
    if node.needs[1]:
        a = s["a"]
        if len(b_shape) == 2:
            # a weight shared across the batch: fold the batch into rows instead of a [batch, K, N] temporary
            b_grad = a.reshape(-1, a.shape[-1]).T @ g.reshape(-1, g.shape[-1])
        else:
            b_grad = unbroadcast(_swap(a) @ g, b_shape)
    return a_grad, b_grad


def _matmul_flops(shapes, out_shape, attrs):
    return 2 * size_of(out_shape) * shapes[0][-1]


register(Op(
    "matmul", "matmul", ("a", "b"), saves={"a": ("b",), "b": ("a",)},
    forward=lambda attrs, a, b: a @ b, vjp=_matmul_vjp, flops=_matmul_flops,
    why="matmul saves both inputs: dW = Xᵀ·dY needs X, and dX = dY·Wᵀ needs W.",
))
