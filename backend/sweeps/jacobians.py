"""A full Jacobian built both ways, each sweep metered: n JVP sweeps (a column each) or m VJP sweeps (a row each).

Forward mode runs the whole function once per input element, carrying a tangent beside every value: nothing is
saved, so a sweep holds only the forward's own values and their tangents. Reverse mode records the forward once
(the tape keeps its saved tensors across every sweep, retain_graph) and then pulls one adjoint back per output
element. For a scalar loss that is one sweep against n: why training uses reverse mode.
"""
from dataclasses import dataclass, field

import numpy as np

from backend.sweeps.meter import metering
from backend.tape import jvp
from backend.tape.engine import backward
from backend.tape.tensor import Tensor
from backend.trace.deadline import check as check_deadline


@dataclass
class ModeRun:
    mode: str                          # "forward" | "reverse"
    jacobian: np.ndarray               # (output elements, input elements)
    sweeps: int
    sweep_flops: int                   # one sweep: forward mode's whole forward + tangents; reverse mode's vjps
    sweep_peak_bytes: int              # the most one sweep held (reverse: the tape it reads included)
    total_flops: int                   # every sweep, and reverse mode's one recorded forward
    total_peak_bytes: int              # the most held at once while building the Jacobian (the Jacobian included)
    forward_flops: int = 0             # reverse mode's recorded forward (forward mode re-runs it in every sweep)
    saved_bytes: int = 0               # what the tape saved for the sweeps (forward mode: none)
    sweep_detail: dict = field(default_factory=dict)

    def report(self):
        return {"mode": self.mode, "sweeps": self.sweeps, "sweep_flops": self.sweep_flops,
                "sweep_peak_bytes": self.sweep_peak_bytes, "total_flops": self.total_flops,
                "total_peak_bytes": self.total_peak_bytes, "forward_flops": self.forward_flops,
                "saved_bytes": self.saved_bytes, **self.sweep_detail}


def forward_mode(fn, x, out_size, reseed=lambda: None):
    """J of fn at x by one JVP sweep per element of x."""
    n = x.size
    most = {"flops": 0, "primal": 0, "tangent": 0, "peak": 0}
    with metering() as total:
        jacobian = np.zeros((out_size, n), dtype=x.dtype)
        direction = np.zeros(x.shape, dtype=x.dtype)
        total.hold(jacobian.nbytes + direction.nbytes)
        for i in range(n):
            check_deadline()
            direction.reshape(-1)[i] = 1
            reseed()
            with metering() as sweep:
                out, tangent = jvp(fn, (x,), (direction,))
                jacobian[:, i] = tangent.data.reshape(-1)
                del out, tangent
            direction.reshape(-1)[i] = 0
            most = {"flops": max(most["flops"], sweep.flops), "primal": max(most["primal"], sweep.primal_flops),
                    "tangent": max(most["tangent"], sweep.derivative_flops),
                    "peak": max(most["peak"], sweep.peak_bytes + direction.nbytes)}
    return ModeRun("forward", jacobian, n, most["flops"], most["peak"], total.flops, total.peak_bytes,
                   sweep_detail={"sweep_primal_flops": most["primal"], "sweep_tangent_flops": most["tangent"]})


def reverse_mode(fn, x, out_size, reseed=lambda: None):
    """J of fn at x by one recorded forward, then one VJP sweep per output element (the tape kept until the last)."""
    with metering() as total:
        jacobian = np.zeros((out_size, x.size), dtype=x.dtype)
        total.hold(jacobian.nbytes)
        leaf = Tensor.view_of(x.data, x, requires_grad=True, name=x.name)
        reseed()
        with metering() as recorded:
            out = fn(leaf)
        tape_bytes = recorded.live_bytes          # the forward's values still held: the saved tensors and the output
        seed = np.zeros(out.shape, dtype=out.dtype)
        most = {"flops": 0, "peak": 0}
        for j in range(out_size):
            check_deadline()
            seed.reshape(-1)[j] = 1
            leaf.grad = None
            with metering() as sweep:
                backward(out, seed, retain_graph=j < out_size - 1)
                if leaf.grad is not None:
                    jacobian[j] = np.asarray(leaf.grad).reshape(-1)
                leaf.grad = None
            seed.reshape(-1)[j] = 0
            most = {"flops": max(most["flops"], sweep.derivative_flops),
                    "peak": max(most["peak"], tape_bytes + sweep.peak_bytes)}
        del out, leaf
    return ModeRun("reverse", jacobian, out_size, most["flops"], most["peak"], total.flops, total.peak_bytes,
                   forward_flops=recorded.primal_flops, saved_bytes=recorded.saved_bytes)


def both_modes(fn, x, out_size, reseed=lambda: None):
    """(forward ModeRun, reverse ModeRun) of the same Jacobian."""
    return forward_mode(fn, x, out_size, reseed), reverse_mode(fn, x, out_size, reseed)
