"""Dual-number mode: while a JVP sweep runs, every tensor may carry a tangent beside its value.

`active` is read once per op by the dispatcher (as `events.active` is), so a run outside forward mode pays one
boolean check. Tangents live in a weak table for the sweep, never on the Tensor: they die with their tensor,
so forward mode's memory is the forward's own (each live value plus its tangent), and nothing leaks into
the next sweep. A View's tangent is not stored: it is always its base's tangent through the jvps of the view's chain, so
an in-place write into any view of a base is seen by every other view, exactly as the values are.
"""
import weakref
from contextlib import contextmanager

active = False
_tangents = None         # WeakKeyDictionary: root tensor -> tangent array, for the running sweep


@contextmanager
def sweep():
    """One JVP sweep's tangent table. Nested sweeps (forward-over-forward) are not supported."""
    global active, _tangents
    if active:
        raise RuntimeError("jvp was called inside a running jvp sweep: forward-over-forward "
                           "(nested forward mode) is not supported")
    active, _tangents = True, weakref.WeakKeyDictionary()
    try:
        yield
    finally:
        active, _tangents = False, None


def tangent_of(tensor):
    """The tangent carried by `tensor` in this sweep, or None."""
    base = getattr(tensor, "base", None)      # a View: its base's tangent, through the same view ops
    if base is not None:
        base_tangent = _tangents.get(base)
        if base_tangent is None:
            return None
        for op, attrs in tensor.chain:
            base_tangent = op.jvp((base_tangent,), None, attrs)    # a view op is linear: its jvp reads no values
        return base_tangent
    return _tangents.get(tensor)


def set_tangent(tensor, tangent):
    """Attach `tangent` to a root tensor (never a View: see tangent_of)."""
    _tangents[tensor] = tangent
