"""Type promotion follows torch.result_type: dimension kinds (tensors, 0-d tensors, Python numbers as weak types)
and categories (bool < integer < floating), checked as a table against torch when it is installed, and the
issue's literal cases without it."""
import itertools

import numpy as np
import pytest

import backend.tape as T
from backend.tape import parameter, tensor
from backend.tape.ops.precision import dtype_named
from backend.tape.promotion import result_type

DTYPES = ["bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
NUMBERS = [True, 3, 2.5]
OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b}


def _ours(dtype, zero_dim):
    values = np.array(1 if zero_dim else [1, 0, 1]).astype(dtype_named(dtype))
    return tensor(values)


def test_the_cases_torch_was_seen_to_disagree_on():
    assert (tensor(np.array([1, 2])) * 2.5).data.tolist() == [2.5, 5.0]
    assert (tensor(np.array([1, 2])) * 2.5).dtype == np.float32
    assert (tensor(np.array([1, 2])) + tensor(np.ones(2, np.float32))).dtype == np.float32
    assert (tensor(np.ones(2, np.float32)) * tensor(np.float64(2.0))).dtype == np.float32
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: float != double"):
        tensor(np.ones((2, 2), np.float32)) @ tensor(np.ones((2, 2)))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        tensor(np.array([1, 2])).add_(1.5)


def test_a_promoted_operands_gradient_comes_back_in_its_own_dtype():
    scale = parameter(np.float64(2.0))                       # 0-d float64: weak beside a float32 tensor
    x = parameter(np.array([1.0, -3.0], dtype=np.float32))
    y = x * scale
    assert y.dtype == np.float32
    y.sum().backward()
    assert scale.grad.dtype == np.float64 and float(scale.grad) == -2.0
    assert x.grad.dtype == np.float32 and x.grad.tolist() == [2.0, 2.0]


def _torch_operand(torch, spec):
    if not isinstance(spec, tuple):
        return spec
    dtype, zero_dim = spec
    return torch.tensor(1 if zero_dim else [1, 0, 1]).to(getattr(torch, dtype))


def _our_operand(spec):
    return _ours(*spec) if isinstance(spec, tuple) else spec


TENSORS = [(dtype, zero_dim) for dtype in DTYPES for zero_dim in (False, True)]
PAIRS = [(a, b) for a, b in itertools.product(TENSORS + NUMBERS, TENSORS + NUMBERS)
         if isinstance(a, tuple) or isinstance(b, tuple)]


@pytest.mark.parametrize("op", sorted(OPS))
def test_result_dtypes_match_torch(op):
    torch = pytest.importorskip("torch")
    wrong = []
    for a, b in PAIRS:
        if op == "sub" and "bool" in (a[0] if isinstance(a, tuple) else type(a).__name__,
                                       b[0] if isinstance(b, tuple) else type(b).__name__):
            continue            # torch refuses subtraction with bool operands
        expected = OPS[op](_torch_operand(torch, a), _torch_operand(torch, b)).dtype
        got = OPS[op](_our_operand(a), _our_operand(b)).data.dtype
        if str(expected).removeprefix("torch.") != got.name:
            wrong.append(f"{a} {op} {b}: torch {expected}, ours {got.name}")
    assert not wrong, "\n".join(wrong)


def test_result_type_matches_torch_result_type():
    torch = pytest.importorskip("torch")
    for a, b in PAIRS:
        expected = torch.result_type(_torch_operand(torch, a), _torch_operand(torch, b))
        assert result_type(_our_operand(a), _our_operand(b)).name == str(expected).removeprefix("torch."), (a, b)
