"""The op registry: each primitive declares its forward, vjp, jvp, saved values and FLOPs in one `Op` entry.

The two derivative rules, side by side:

- `vjp(g, saved, node) -> one gradient per input` (reverse mode): `g` is the output's adjoint, `saved` the
  values the forward pinned (see `saves`), `node` the tape entry (attrs, input shapes, which inputs need grad).
  None where no gradient flows. A vjp is written in backend/tape/arrays.py's namespace and operators, so the
  one rule runs on ndarrays on the plain path and on Tensors (recorded) under create_graph; an op whose rule
  reads a saved value that is a function of its inputs but not on the tape says why in `not_recordable`.
- `jvp(tangents, values, attrs) -> the output's tangent` (forward mode, backend/tape/forward.py): `tangents`
  holds one array per input, None where the input carries none (at least one is not None); `values` maps
  every input name, "out" and every extra to its array from this very forward (nothing is saved: forward
  mode reads them while they are alive anyway); `attrs` are the op's attributes. The result may broadcast
  to the output's shape (the dispatcher broadcasts it).

An `Op` saves only what the gradients of its inputs that require grad need: `saves` maps each saved
value ("out", an input name, or an extra the forward computes) to the inputs whose vjp reads it.
"""
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import numpy as np

OPS = {}


@dataclass(frozen=True)
class Op:
    name: str
    family: str                 # elementwise | binary | matmul | reduce | normalization | loss | movement | random | attention
    inputs: tuple               # input names, in call order
    forward: Callable           # forward(attrs, *arrays) -> out, or (out, {extra: array}) when `extras`
    vjp: Callable               # vjp(g, saved, node) -> one gradient per input, None where none flows
    jvp: Callable               # jvp(tangents, values, attrs) -> the output's tangent (module docstring)
    flops: Callable             # flops(input_shapes, out_shape, attrs) -> forward FLOPs
    saves: dict = field(default_factory=dict)   # saved name -> names of inputs whose gradient needs it
    extras: tuple = ()          # names of the extra arrays the forward returns for saving (masks, statistics)
    view: bool = False          # output may share the storage of input 0
    variadic: bool = False      # takes any number of inputs (concat)
    why: str = ""               # one sentence on why it saves what it saves, shown in the sweep
    takes_adjoint: bool = False  # vjp takes and returns engine Adjoints (a checkpoint's nested sweep)
    backward: str = ""          # the grad_fn's name when it is not <Name>Backward (CopySlices)
    not_recordable: str = ""    # why its vjp cannot run on the tape (create_graph refuses it, naming this)
    output_kind: Callable = None  # output_kind(inputs) -> the output storage's memory kind; None: "activation"

    @cached_property
    def backward_name(self):
        return self.backward or "".join(part.capitalize() for part in self.name.split("_")) + "Backward"

    def save_plan(self):
        """(saved name, where it comes from, which input grads need it) for every declared saved value."""
        plan = []
        for saved_name, needed_by in self.saves.items():
            if saved_name == "out":
                source = ("out", None)
            elif saved_name in self.extras:
                source = ("extra", saved_name)
            else:
                source = ("input", self.inputs.index(saved_name))
            indices = tuple(self.inputs.index(n) for n in needed_by) if not self.variadic else ()
            plan.append((saved_name, source, indices))
        return tuple(plan)


_plans = {}


def register(op):
    if op.name in OPS:
        raise ValueError(f"op {op.name!r} is registered twice")
    OPS[op.name] = op
    _plans[op.name] = op.save_plan()
    return op


def plan_of(op):
    return _plans[op.name]


def run_forward(op, attrs, arrays):
    """(out, extras) of `op`'s forward on `arrays`, extras None unless the op declares some. `out` is always an
    ndarray: numpy hands back a scalar, not a 0-d array, from a ufunc on 0-d inputs, so no forward wraps its own."""
    result = op.forward(attrs, *arrays)
    out, extras = result if op.extras else (result, None)
    if type(out) is not np.ndarray:
        out = np.asarray(out)
    return out, extras


def tangent_sum(*terms):
    """Add a jvp's terms, skipping None (an input without a tangent contributes nothing)."""
    total = None
    for term in terms:
        if term is not None:
            total = term if total is None else total + term
    return total


def per_element(cost, input_index=None):
    """FLOPs as `cost` per element of the output (or of input `input_index`)."""
    def flops(shapes, out_shape, attrs):
        return cost * size_of(out_shape if input_index is None else shapes[input_index])
    return flops


def size_of(shape):
    n = 1
    for d in shape:
        n *= d
    return n
