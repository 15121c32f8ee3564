"""One traced run of a normalized spec: forward (with optional checkpoint regions), backward and an optimizer
step, recorded; and the same run measured with tracemalloc. Requests come in through backend/driver.py."""
import tracemalloc

import numpy as np

from backend.models import Model
from backend.models.kinds import chain
from backend.tape import ENGINE_VERSION, checkpoint
from backend.tape.events import listening
from backend.tape.remat import recomputing
from backend.tape.storage import reset_addresses
from backend.trace.deadline import check as check_deadline
from backend.trace.document import build_document, peak_of
from backend.trace.recorder import Recorder


def run_model(spec, regions=(), preserve_rng_state=True, recorder=None, recompute=None):
    """Build the model; forward with each region (consecutive block indices) under checkpoint(), or with the
    outputs of the `recompute` tape entries recomputed in backward instead of saved; backward; the optimizer
    step. Returns (model, loss, grads): copies of every parameter's .grad before the step."""
    if recompute is not None:
        with recomputing(recompute):
            return run_model(spec, regions, preserve_rng_state, recorder)
    begin = recorder.begin if recorder is not None else (lambda phase: None)
    begin("forward")
    model = Model(spec)
    first_of = {region[0]: region for region in regions}
    h, index = model.input, 0
    while index < len(model.blocks):
        check_deadline()             # the recorder checks every step; an unrecorded run checks every block
        path, fn = model.blocks[index]
        if recorder is not None:
            recorder.note_block_input(path, h)
        region = first_of.get(index)
        if region is None:
            h = fn(h)
            index += 1
            continue
        inner = [model.blocks[region[0]][1]] + [_noted(recorder, *model.blocks[i]) for i in region[1:]]
        h = checkpoint(chain(inner), h, preserve_rng_state=preserve_rng_state)
        index = region[-1] + 1
    loss = model.loss(h)
    del h
    check_deadline()
    begin("backward")
    loss.backward()
    grads = {name: (None if p.grad is None else np.array(p.grad)) for name, p in model.params.items()}
    if model.optimizer is not None:
        begin("optimizer")
        model.optimizer.step()
    return model, loss, grads


def _noted(recorder, path, fn):
    """A block inside a region that tells the recorder its input in forward (not again when recomputed)."""
    if recorder is None:
        return fn

    def run(h):
        if recorder.phase == "forward":
            recorder.note_block_input(path, h)
        return fn(h)
    return run


def record(spec, regions=(), preserve_rng_state=True, recompute=None):
    """(trace document, parameter gradients) of one run of a normalized spec."""
    recorder, loss, grads = _recorded(spec, regions, preserve_rng_state, recompute, Recorder())
    return build_document(recorder, spec, ENGINE_VERSION, float(loss.data)), grads


def record_peak(spec, regions=(), preserve_rng_state=True, recompute=None):
    """(peak live bytes, summary.peak, parameter gradients) of one run, recorded as `record` does but without
    tensor values or a document: a schedule that is executed only to check its predicted peak and gradients."""
    recorder, _loss, grads = _recorded(spec, regions, preserve_rng_state, recompute, Recorder(values=False))
    return (*peak_of(recorder, spec), grads)


def _recorded(spec, regions, preserve_rng_state, recompute, recorder):
    reset_addresses()
    with listening(recorder):
        model, loss, grads = run_model(spec, regions, preserve_rng_state, recorder, recompute)
    del model             # after the listener is gone: end-of-run teardown is not part of the trace
    return recorder, loss, grads


def measure_peak(spec, regions=(), preserve_rng_state=True, recompute=None):
    """Peak bytes traced by tracemalloc (numpy reports its buffers there) over the same run, no listener."""
    already = tracemalloc.is_tracing()
    if not already:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        baseline = tracemalloc.get_traced_memory()[0]
        model, loss, grads = run_model(spec, regions, preserve_rng_state, recompute=recompute)
        peak = tracemalloc.get_traced_memory()[1] - baseline
        del model, loss, grads
        return int(peak)
    finally:
        if not already:
            tracemalloc.stop()
