"""One traced run of a spec: forward, backward and an optimizer step, recorded; then the same run measured."""
import threading
import tracemalloc

from backend.models import Model, validate_spec
from backend.tape import ENGINE_VERSION
from backend.tape.events import listening
from backend.tape.storage import reset_addresses
from backend.trace.document import build_document
from backend.trace.recorder import Recorder


# The engine's event bus, address space and generator are process-wide: one traced run at a time per process
# (threaded servers and test clients in threads); gunicorn's sync workers are separate processes.
_ENGINE_LOCK = threading.Lock()


def trace_spec(spec, checkpoint=None, measure=True):
    """Validate `spec`, run it under the recorder and return the trace document.

    Raises SpecError / CapError (from backend.models) for a bad or oversized spec, before allocating.
    """
    normalized = validate_spec(spec)
    with _ENGINE_LOCK:
        document = record(normalized)
        if checkpoint is not None:
            from backend.planner import plan_document     # the planner sits after the trace in the flow
            document.update(plan_document(normalized, checkpoint))
        if measure:
            document["summary"]["measured_peak_bytes"] = measure_peak(normalized)
    return document


def run_once(spec, recorder=None):
    """Build the model and run forward, backward and the optimizer step; returns (model, loss)."""
    begin = recorder.begin if recorder is not None else (lambda phase: None)
    begin("forward")
    model = Model(spec)
    loss = model.forward(run_block=_noting(recorder) if recorder is not None else None)
    begin("backward")
    loss.backward()
    if model.optimizer is not None:
        begin("optimizer")
        model.optimizer.step()
    return model, loss


def _noting(recorder):
    """A block runner that tells the recorder which storage enters each block."""
    def run_block(path, fn, h):
        recorder.note_block_input(path, h)
        return fn(h)
    return run_block


def record(spec):
    reset_addresses()
    recorder = Recorder()
    with listening(recorder):
        model, loss = run_once(spec, recorder)
    document = build_document(recorder, spec, ENGINE_VERSION, float(loss.data))
    del model, loss       # after the listener is gone: end-of-run teardown is not part of the trace
    return document


def measure_peak(spec):
    """Peak bytes traced by tracemalloc (numpy reports its buffers there) over the same run, no listener."""
    already = tracemalloc.is_tracing()
    if not already:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        baseline = tracemalloc.get_traced_memory()[0]
        model, loss = run_once(spec)
        peak = tracemalloc.get_traced_memory()[1] - baseline
        del model, loss
        return int(peak)
    finally:
        if not already:
            tracemalloc.stop()
