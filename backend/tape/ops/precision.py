"""The precision op: `cast`, torch's Tensor.to(dtype) (grad_fn ToCopyBackward0), which autocast records.

Its vjp casts the adjoint back to the input's dtype, so a float32 master weight gets a float32 gradient from its
float16 copy. It saves nothing: the low-precision copy is saved by the op that reads it (a matmul pins both of
its inputs), as under torch.autocast. A copy of a parameter is its own memory kind, "weight_copy", so the
memory timeline tells master weights from their compute copies. bfloat16 is ml_dtypes' numpy dtype.
"""
import ml_dtypes
import numpy as np

from backend.tape import arrays as A
from backend.tape.registry import Op, register

LOW_PRECISION = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}


def dtype_named(name):
    """The numpy dtype for a dtype name, bfloat16 included."""
    return LOW_PRECISION.get(name) or np.dtype(name)


def _forward(attrs, x):
    return x.astype(dtype_named(attrs["dtype"]))


def _vjp(g, saved, node):
    return (A.astype(g, dtype_named(node.attrs["source"])),)


def _jvp(tangents, values, attrs):
    return A.astype(tangents[0], dtype_named(attrs["dtype"]))


def _output_kind(inputs):
    return "weight_copy" if inputs[0].storage.kind == "param" else "activation"


register(Op(
    "cast", "elementwise", ("x",),
    forward=_forward, vjp=_vjp, jvp=_jvp,
    flops=lambda shapes, out_shape, attrs: 0,       # a copy: memory traffic, no arithmetic
    backward="ToCopyBackward0", output_kind=_output_kind,
    why="cast saves nothing: its vjp casts the adjoint back to the input's dtype.",
))
