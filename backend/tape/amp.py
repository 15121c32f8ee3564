"""Automatic mixed precision: `autocast` runs a forward in float16 or bfloat16 while the parameters stay float32
masters, as torch.autocast does.

Inside `autocast("float16")` the dispatcher asks `inputs_for(op, inputs)` which inputs to cast first:

- matmul and attention (torch's lower-precision list): every floating input is cast to the compute dtype;
- the float32 list (softmax, log_softmax, cross_entropy, layernorm, rmsnorm, sum, mean, exp, log, pow): every
  floating input in a low dtype is cast up to float32, as torch runs its reductions, norms and losses;
- any other op: parameters are cast to the compute dtype (a bias added to a float16 product stays float16,
  as nn.Linear's bias does inside F.linear); other inputs are used as they are.

Each cast is a recorded `cast` entry when its input requires grad. A parameter is cast once per autocast region
(torch's cast cache), and that copy lives as long as some entry saves it: the low-precision weight copies. A cast
made while recording is off (inside a checkpoint region's forward) is cached apart, for unrecorded uses only: its
copy has no history, and a later recorded use of the same parameter needs one. Either lives until the region ends,
as torch's cache holds it.

`state()` is the autocast state in force; `running_as(state)` re-enters one, with a fresh cast cache, as a
checkpoint's recompute does for the state its region was recorded under.
"""
from contextlib import contextmanager

import numpy as np

from backend.tape import grad_mode
from backend.tape.ops.precision import LOW_PRECISION
from backend.tape.registry import OPS

active = False
compute_dtype = None
_copies = {}                    # (parameter uid, recorded) -> its low-precision copy in this region

LOWER = frozenset({"matmul", "attention"})
FLOAT32 = frozenset({"softmax", "log_softmax", "cross_entropy", "layernorm", "rmsnorm", "sum", "mean", "exp",
                     "log", "pow"})
FLOAT32_DTYPE = np.dtype(np.float32)


@contextmanager
def autocast(dtype_name):
    """Run the block with `dtype_name` ("float16" or "bfloat16") as the compute dtype."""
    if dtype_name not in LOW_PRECISION:
        raise ValueError(f"autocast computes in float16 or bfloat16, not {dtype_name!r}")
    with running_as(dtype_name):
        yield


def state():
    """The autocast state in force: the compute dtype's name, or None outside autocast."""
    return _name(compute_dtype) if active else None


@contextmanager
def running_as(dtype_name):
    """Run the block under the autocast state `state()` returned: that compute dtype, or none."""
    global active, compute_dtype, _copies
    previous = (active, compute_dtype, _copies)
    active, compute_dtype, _copies = dtype_name is not None, LOW_PRECISION.get(dtype_name), {}
    try:
        yield
    finally:
        active, compute_dtype, _copies = previous


def inputs_for(op, inputs):
    """The inputs `op` runs on under autocast: the originals, or casts of some of them."""
    name = op.name
    if name == "cast":
        return inputs
    if name in LOWER:
        wanted = [compute_dtype if _floating(t) else None for t in inputs]
    elif name in FLOAT32:
        wanted = [FLOAT32_DTYPE if _floating(t) else None for t in inputs]
    else:
        wanted = [compute_dtype if _is_master(t) else None for t in inputs]
    if not any(d is not None and d != t.data.dtype for d, t in zip(wanted, inputs)):
        return inputs
    return [t if d is None or d == t.data.dtype else _cast(t, d) for d, t in zip(wanted, inputs)]


def _floating(t):
    return t.data.dtype.kind == "f" or t.data.dtype in LOW_PRECISION.values()


def _is_master(t):
    return t.grad_fn is None and t.storage.kind == "param" and t.data.dtype == FLOAT32_DTYPE     # frozen too


def _cast(t, dtype):
    from backend.tape.dispatch import apply           # dispatch imports this module: its hook calls back here
    master = _is_master(t)
    if master:
        cached = _copies.get((t.uid, True))                 # a recorded copy serves any use
        if cached is None and not grad_mode.enabled:
            cached = _copies.get((t.uid, False))            # an unrecorded one only unrecorded uses
        if cached is not None:
            return cached
    out = apply(OPS["cast"], (t,), {"dtype": _name(dtype), "source": _name(t.data.dtype)})
    if master:
        _copies[(t.uid, grad_mode.enabled)] = out
    return out


def _name(dtype):
    return dtype.name                                  # ml_dtypes names its dtype "bfloat16"
