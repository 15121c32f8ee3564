"""Type promotion as torch.result_type: the dtype a binary op computes in, from its operands' dtypes and kinds.

Operands come in three kinds, weakest last: tensors with dimensions, 0-d tensors, and Python numbers. Each kind
promotes within itself; then a weaker kind only counts when it is of a higher category (bool < integer <
floating) than everything stronger. So int64 + float32 is float32, a float32 tensor times a float64 0-d tensor
stays float32, an integer tensor times 2.5 is float32 (a Python float is the default dtype, float32), and
float16 + a Python float stays float16. Across categories the floating side wins outright (int64 + float16 is
float16, where numpy says float64); float16 with bfloat16 meets at float32.

`binary_operands(op, a, b)` gives the two operands as Tensors in the result dtype: a Python number becomes a constant,
a tensor of another dtype a `cast` (recorded when it requires grad, so its gradient comes back in its own dtype).
"""
import numpy as np

from backend.tape import amp
from backend.tape.dispatch import apply
from backend.tape.registry import OPS
from backend.tape.tensor import Tensor, constant_leaf, differentiable

BOOL, INTEGER, FLOATING = 0, 1, 2
DEFAULT_FLOAT = np.dtype(np.float32)        # torch.get_default_dtype(): what a Python float is
PYTHON_INT = np.dtype(np.int64)


def category(dtype):
    if dtype.kind == "b":
        return BOOL
    if dtype.kind in "iu":
        return INTEGER
    if differentiable(dtype):
        return FLOATING
    raise TypeError(f"no type promotion for dtype {dtype}")


def promote_types(a, b):
    """torch.promote_types for bool, integer and floating dtypes."""
    if a == b:
        return a
    ca, cb = category(a), category(b)
    if ca != cb:
        return a if ca > cb else b
    if ca == FLOATING:
        if {a.name, b.name} == {"float16", "bfloat16"}:
            return DEFAULT_FLOAT
        return a if a.itemsize >= b.itemsize else b
    return np.promote_types(a, b)           # integers: numpy's lattice is torch's (uint8 + int8 = int16)


def _number_dtype(value):
    """A Python number's dtype as a weak operand. A numpy array or scalar counts as one too, by its category:
    the vjps' masks and constants, which take the tensor's dtype as they always have."""
    if isinstance(value, np.ndarray):
        value = value.dtype.type(0) if value.dtype.kind in "biuf" else value
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(bool)
    if isinstance(value, (int, np.integer)):
        return PYTHON_INT
    if isinstance(value, (float, np.floating)):
        return DEFAULT_FLOAT
    raise TypeError(f"an operand must be a Tensor, a number or a numpy array, not {type(value).__name__}")


def result_type(*operands):
    """The dtype torch computes `operands` (Tensors and Python numbers) in."""
    kinds = {"dim": None, "zero": None, "number": None}
    for operand in operands:
        if isinstance(operand, Tensor):
            kind, dtype = ("dim" if operand.data.ndim else "zero"), operand.data.dtype
        else:
            kind, dtype = "number", _number_dtype(operand)
        kinds[kind] = dtype if kinds[kind] is None else promote_types(kinds[kind], dtype)
    return _combine(kinds["dim"], _combine(kinds["zero"], kinds["number"]))


def _combine(higher, lower):
    """A weaker kind's dtype joins only from a higher category (torch's combine_categories)."""
    if higher is None:
        return lower
    if lower is None or category(higher) == FLOATING:
        return higher
    if category(higher) == BOOL or category(lower) == FLOATING:
        return promote_types(higher, lower)
    return higher


def operand_as(value, dtype):
    """`value` as a Tensor of `dtype`: itself, a constant for a number, or a cast (recorded if it needs grad)."""
    if isinstance(value, Tensor):
        if value.data.dtype == dtype:
            return value
        return apply(OPS["cast"], (value,), {"dtype": dtype.name, "source": value.data.dtype.name})
    return constant_leaf(np.asarray(value, dtype=dtype))


def binary_operands(op, a, b):
    """`op`'s two operands as Tensors in their result dtype. Under autocast its casts come first (a float32
    master bias meets a float16 product as float16, as in torch), then promotion."""
    if not amp.active:              # the common cases, on every binary op: nothing to weigh
        if type(a) is type(b) is Tensor and a.data.dtype == b.data.dtype:
            return a, b
        if type(a) is Tensor and type(b) in (int, float) and a.data.dtype.kind == "f":
            return a, operand_as(b, a.data.dtype)          # a floating tensor beside a Python number keeps its dtype
    if amp.active:
        tensors = [x for x in (a, b) if isinstance(x, Tensor)]
        cast = iter(amp.inputs_for(op, tensors))
        a, b = [next(cast) if isinstance(x, Tensor) else x for x in (a, b)]
    dtype = result_type(a, b)
    return operand_as(a, dtype), operand_as(b, dtype)


def inplace_operand(target, other):
    """`other` for an in-place op on `target`: torch computes in the result type, which must fit the target."""
    dtype = result_type(target, other)
    if category(dtype) > category(target.data.dtype):
        raise RuntimeError(f"result type {_torch_name(dtype)} can't be cast to the desired output type "
                           f"{_torch_name(target.data.dtype)}")
    return operand_as(other, target.data.dtype)


def _torch_name(dtype):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}.get(dtype.name, dtype.name)
