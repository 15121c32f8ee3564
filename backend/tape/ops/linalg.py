"""Matrix multiply, 2-D, batched and with 1-D operands: the op that pins both of its inputs."""
import numpy as np

from backend.tape import arrays as A
from backend.tape.arrays import unbroadcast
from backend.tape.registry import Op, register, size_of, tangent_sum


def _product(a, b):
    """a @ b in the operands' dtype: numpy computes a bfloat16 product in float32 and returns float32."""
    out = a @ b
    if out.dtype != a.dtype and a.dtype == b.dtype:
        out = out.astype(a.dtype)
    return out


def _matmul_forward(attrs, a, b):
    try:
        return np.asarray(_product(a, b))   # vec @ vec is 0-d: an array, not a numpy scalar
    except ValueError:
        if a.ndim == 0 or b.ndim == 0:
            raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                               f"{a.ndim}D and {b.ndim}D") from None
        raise


def _matmul_vjp(g, s, node):
    a_shape, b_shape = node.shapes
    if len(a_shape) == 1 or len(b_shape) == 1:
        return _vector_matmul_vjp(g, s, node)
    return _matrix_vjp(g, s.get("a"), s.get("b"), a_shape, b_shape, node.needs)


def _matrix_vjp(g, a, b, a_shape, b_shape, needs):
    a_grad = b_grad = None
    if needs[0]:
        a_grad = unbroadcast(_product(g, A.swapaxes(b)), a_shape)
    if needs[1]:
        if len(b_shape) == 2:
            # a weight shared across the batch: fold the batch into rows instead of a [batch, K, N] temporary
            # (the row count spelled out: -1 is ambiguous when K or N is 0, and torch gives zeros there)
            rows = int(np.prod(a.shape[:-1]))
            b_grad = _product(A.swapaxes(A.reshape(a, (rows, a.shape[-1]))), A.reshape(g, (rows, g.shape[-1])))
        else:
            b_grad = unbroadcast(_product(A.swapaxes(a), g), b_shape)
    return a_grad, b_grad


def _vector_matmul_vjp(g, s, node):
    """torch.matmul's 1-D rules run backwards: a vector a is a [1, K] row, a vector b a [K, 1] column, and the
    adjoint gets back the axis the forward dropped; each gradient is then reshaped to its operand's shape."""
    a_shape, b_shape = node.shapes
    a, b = s.get("a"), s.get("b")
    a_matrix, b_matrix = a_shape, b_shape
    if len(b_shape) == 1:                   # first: for vec @ vec the 0-d adjoint becomes [1], then [1, 1]
        g = A.expand_dims(g, g.ndim)
        b = None if b is None else A.reshape(b, b_shape + (1,))
        b_matrix = b_shape + (1,)
    if len(a_shape) == 1:
        g = A.expand_dims(g, g.ndim - 1)
        a = None if a is None else A.reshape(a, (1,) + a_shape)
        a_matrix = (1,) + a_shape
    a_grad, b_grad = _matrix_vjp(g, a, b, a_matrix, b_matrix, node.needs)
    return (None if a_grad is None else A.reshape(a_grad, a_shape),
            None if b_grad is None else A.reshape(b_grad, b_shape))


def _matmul_jvp(t, v, attrs):
    """d(a @ b) = da @ b + a @ db: the forward's own product rule (1-D rules included), no transposes."""
    return tangent_sum(None if t[0] is None else t[0] @ v["b"], None if t[1] is None else v["a"] @ t[1])


def _matmul_flops(shapes, out_shape, attrs):
    return 2 * size_of(out_shape) * shapes[0][-1]


register(Op(
    "matmul", "matmul", ("a", "b"), saves={"a": ("b",), "b": ("a",)},
    forward=_matmul_forward, vjp=_matmul_vjp, jvp=_matmul_jvp, flops=_matmul_flops,
    why="matmul saves both inputs: dW = Xᵀ·dY needs X, and dX = dY·Wᵀ needs W.",
))
