"""Every op, with every subset of its float inputs requiring grad: the vjp runs, reads exactly what was saved, and
matches finite differences. A `saves` entry missing what a vjp reads for some subset of `needs` is a KeyError
here; a value saved but never read is a wasted pin, which the memory view would show as activation bytes.
"""
import itertools

import numpy as np
import pytest

from backend.tape import Tensor, gradcheck, parameter, tensor
from backend.tape.node import Node
from tests.tape.test_gradcheck_ops import CASES


def _float_positions(inputs):
    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.data.dtype.kind == "f"]


def _subsets():
    for op_name, cases in CASES.items():
        for index, (_fn, inputs) in enumerate(cases):
            floats = _float_positions(inputs)
            for size in range(1, len(floats) + 1):
                for chosen in itertools.combinations(floats, size):
                    yield op_name, index, chosen


class _Reads(dict):
    """The saved values handed to a vjp, remembering which ones it reads."""

    def __init__(self, values, log):
        super().__init__(values)
        self.log = log

    def __getitem__(self, key):
        self.log.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        if key in self:
            self.log.add(key)
        return super().get(key, default)


@pytest.fixture
def reads(monkeypatch):
    """node -> (saved names, names its vjp read), for every node unpacked in the test."""
    seen = {}
    unpack = Node.unpack

    def tracking_unpack(node):
        values = unpack(node)
        log = set()
        seen[node] = (set(values) - {"__recomputed__"}, log)
        return _Reads(values, log)

    monkeypatch.setattr(Node, "unpack", tracking_unpack)
    return seen


@pytest.mark.parametrize("op_name,index,chosen", list(_subsets()))
def test_each_subset_of_inputs_requiring_grad(op_name, index, chosen, reads):
    fn, template = CASES[op_name][index]
    inputs = [t if i not in _float_positions(template) else
              (parameter(t.data.copy()) if i in chosen else tensor(t.data.copy()))
              for i, t in enumerate(template)]
    out = fn(*inputs)
    assert type(out.data) is np.ndarray, f"{op_name} returned {type(out.data).__name__}, not an ndarray"
    assert out.requires_grad
    assert gradcheck(fn, inputs)
    for i, t in enumerate(inputs):
        if i not in chosen and isinstance(t, Tensor):
            assert t.grad is None, f"input {i} does not require grad but got a gradient"
    for node, (saved, read) in reads.items():
        if node.op.takes_adjoint:        # a checkpoint reads its saved inputs itself, to re-run the region
            continue
        if node.op.name == "pow" and node.attrs["exponent"] == 0:
            continue                      # PyTorch's PowBackward0 saves x for x ** 0 too (its gradient is zeros)
        assert saved <= read, f"{node.op.name} with needs {node.needs} saved {sorted(saved - read)} it never read"
