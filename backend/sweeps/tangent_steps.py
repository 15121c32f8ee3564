"""One JVP sweep stepped op by op: each op's value and the tangent it carries, for one input direction.

The direction is one input element (a basis vector e_k): the tangent at every op is then the column k of that
op's Jacobian with respect to the input, the derivative of its value along x_k. Each step names the trace's tape
entry it matches (the trace records an op when a parameter or a recorded op feeds it; forward mode dispatches
the same ops in the same order), so the page can light that node while the panel shows value and tangent.
"""
import numpy as np

from backend.sweeps.meter import metering
from backend.tape import dual, events, grad_mode, jvp
from backend.trace.values import ValueTable


def tangent_steps(subject, element):
    """{direction, steps: [{index, entry, op, scope, shape, value, tangent, flops}], output, loss} for e_element."""
    direction = np.zeros(subject.x.shape, dtype=subject.x.dtype)
    direction.reshape(-1)[element] = 1
    steps = _StepRecorder(subject)
    subject.reseed()
    with events.listening(steps), metering() as meter:
        loss, tangent = jvp(subject.loss, (subject.x,), (direction,))
    steps.values.fill()
    return {
        "direction": {"element": int(element), "index": [int(i) for i in np.unravel_index(element, subject.x.shape)],
                      "input_shape": list(subject.x.shape), "input": subject.input_name},
        "steps": steps.steps,
        "loss": {"value": float(loss.data), "tangent": float(tangent.data)},
        "flops": meter.flops,
        "peak_bytes": meter.peak_bytes,
    }


class _StepRecorder:
    """Listens to one JVP sweep: a step per dispatched op, with its trace entry when the trace records it."""

    def __init__(self, subject):
        self.values = ValueTable()
        self.steps = []
        self._recorded = {p.uid for p in subject.model.params.values()}     # tensors the trace has history for
        self._next_entry = subject.entry_offset
        self._x = subject.x if subject.entry_offset else None     # embedded tokens: the trace's history reaches x

    def __call__(self, kind, payload):
        if kind == events.TANGENT:
            self._step(**payload)
        elif kind == events.VIEW and self._x is not None and payload["storage"] is self._x.storage:
            self._recorded.add(payload["tensor"].uid)              # jvp's carrier of x

    def _step(self, op, attrs, inputs, output):
        entry = None
        if any(t.uid in self._recorded or getattr(t, "base", None) is not None and t.base.uid in self._recorded
               for t in inputs):
            entry = self._next_entry
            self._next_entry += 1
            self._recorded.add(output.uid)
        shapes = tuple([t.data.shape for t in inputs])
        step = {"index": len(self.steps), "entry": entry, "op": op.name, "scope": grad_mode.scope or None,
                "shape": list(output.data.shape), "flops": int(op.flops(shapes, output.data.shape, attrs)),
                "value": {}, "tangent": None}
        self.values.add(step["value"], output.data, False)
        tangent = dual.tangent_of(output)
        if tangent is not None:
            step["tangent"] = {}
            self.values.add(step["tangent"], tangent, False)
        self.steps.append(step)
