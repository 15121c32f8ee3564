"""One traced run of a normalized spec: forward (with optional checkpoint regions), backward (recorded, with a
gradient penalty, and then a second backward through it), per micro-batch, and an optimizer step, recorded; and
the same run measured with tracemalloc. Requests come in through backend/driver.py."""
import tracemalloc
from contextlib import nullcontext

import numpy as np

from backend.models import Model
from backend.models.kinds import chain
from backend.tape import ENGINE_VERSION, autocast, checkpoint
from backend.tape.events import listening
from backend.tape.remat import recomputing
from backend.tape.scaler import LossScaler
from backend.tape.storage import reset_addresses
from backend.trace.deadline import check as check_deadline
from backend.trace.document import build_document, peak_of
from backend.trace.failure import is_version_error
from backend.trace.recorder import Recorder


def run_model(spec, regions=(), preserve_rng_state=True, recorder=None, recompute=None):
    """Build the model; for each of the spec's `accumulate` micro-batches, forward with each region (consecutive
    block indices) under checkpoint(), or with the outputs of the `recompute` tape entries recomputed in backward
    instead of saved, then backward (.grad sums across them); then the optimizer step. With `precision`, the
    forward runs under autocast and backward from the scaled loss, and the gradients are unscaled before the
    step (which the scaler skips on inf/NaN). With a gradient penalty the backward is recorded (create_graph) and
    a second backward ("backward-2") runs through it and the forward. Returns (model, loss, grads): the step's
    loss as a float and copies of every parameter's .grad before the step (None for a frozen one).

    A backward that raises the version-counter error stops the run there: `model.backward_error` keeps the
    engine's text, the grads are what had arrived, and there is no optimizer step (nor a later micro-batch).
    """
    if recompute is not None:
        with recomputing(recompute):
            return run_model(spec, regions, preserve_rng_state, recorder)
    begin = recorder.begin if recorder is not None else (lambda phase, micro_batch=None: None)
    micro_batches = spec.get("accumulate", 1)
    numbered = (lambda k: k) if micro_batches > 1 else (lambda k: None)
    begin("forward", numbered(1))
    model = Model(spec)
    precision = spec.get("precision")
    scaler = loss_scaler(precision)
    total_loss = 0.0
    model.losses = []                # held with the model, as the run's caller held the loss: freed after the trace
    for k, (inputs, target) in enumerate(model.micro_batches(), start=1):
        begin("forward", numbered(k))
        with _autocasting(precision):
            h = _forward(model, inputs, regions, preserve_rng_state, recorder)
            loss = model.loss(h, target)
        del h
        if micro_batches > 1 and model.loss_is_mean:
            loss = loss / float(micro_batches)
        total_loss += float(loss.data)
        check_deadline()
        model.losses.append(loss if scaler is None else scaler.scale(loss))     # the scaling is a forward op
        begin("backward", numbered(k))
        del loss
        try:
            penalized = model.penalized(model.losses[-1])   # with a gradient penalty: a recorded backward first
            if penalized is not None:
                total_loss += float(penalized.data) - float(model.losses[-1].data)
                model.losses[-1] = penalized
                del penalized
                begin("backward-2", numbered(k))            # through the recorded backward and the forward
            model.losses[-1].backward()
        except RuntimeError as error:
            if not is_version_error(error):
                raise
            model.backward_error = str(error)
            break
    stopped = model.backward_error is not None
    if scaler is not None and not stopped:
        begin("optimizer")
        scaler.unscale_(model.params.values())
    grads = {name: (None if p.grad is None else np.array(p.grad)) for name, p in model.params.items()}
    if stopped:
        return model, total_loss, grads
    if model.optimizer is not None:
        begin("optimizer")
        if scaler is None:
            model.optimizer.step()
        else:
            scaler.step(model.optimizer)
    if scaler is not None:
        scaler.update()
        if recorder is not None:
            recorder.note_scaler(scaler.summary())
    return model, total_loss, grads


def loss_scaler(precision):
    """The spec's loss scaler, or None without mixed precision."""
    if precision is None:
        return None
    return LossScaler(precision["loss_scale"], growth_interval=precision["growth_interval"])


def _autocasting(precision):
    return autocast(precision["compute"]) if precision is not None else nullcontext()


def _forward(model, h, regions, preserve_rng_state, recorder):
    """The blocks on one (micro-)batch; `recorder` hears each block's input."""
    first_of = {region[0]: region for region in regions}
    index = 0
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
    return h


def _noted(recorder, path, fn):
    """A block inside a region that tells the recorder its input in forward (not again when recomputed)."""
    if recorder is None:
        return fn

    def run(h):
        if recorder.phase == "forward":
            recorder.note_block_input(path, h)
        return fn(h)
    return run


def record(spec, regions=(), preserve_rng_state=True, recompute=None, values=True):
    """(trace document, parameter gradients) of one run of a normalized spec; `values=False` leaves out tensor
    values and statistics (a run traced only for its memory and summary, as a lever is)."""
    recorder, loss, grads, outcome = _recorded(spec, regions, preserve_rng_state, recompute, Recorder(values=values))
    return build_document(recorder, spec, ENGINE_VERSION, loss, **outcome), grads


def record_peak(spec, regions=(), preserve_rng_state=True, recompute=None):
    """(peak live bytes, summary.peak, parameter gradients) of one run, recorded as `record` does but without
    tensor values or a document: a schedule that is executed only to check its predicted peak and gradients."""
    recorder, _loss, grads, _outcome = _recorded(spec, regions, preserve_rng_state, recompute, Recorder(values=False))
    return (*peak_of(recorder, spec), grads)


def _recorded(spec, regions, preserve_rng_state, recompute, recorder):
    """(recorder, loss, grads, outcome): outcome is what the model itself knows of the run, the document's cuts and
    backward_error."""
    reset_addresses()
    with listening(recorder):
        model, loss, grads = run_model(spec, regions, preserve_rng_state, recorder, recompute)
    outcome = {"cuts": model.cuts, "backward_error": model.backward_error}
    del model             # after the listener is gone: end-of-run teardown is not part of the trace
    return recorder, loss, grads, outcome


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
