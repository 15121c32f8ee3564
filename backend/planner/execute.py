"""Run a spec with checkpoint regions under the recorder: the executed side of every schedule."""
import numpy as np

from backend.models import Model
from backend.tape import ENGINE_VERSION, checkpoint
from backend.tape.events import listening
from backend.tape.storage import reset_addresses
from backend.trace.document import build_document
from backend.trace.recorder import Recorder


def run_regions(spec, regions, preserve_rng_state=True, recorder=None):
    """Forward with each region (a list of consecutive block indices) checkpointed, backward, optimizer step.

    Returns (model, loss, grads): grads are copies of every parameter's .grad taken before the optimizer step.
    """
    begin = recorder.begin if recorder is not None else (lambda phase: None)
    begin("forward")
    model = Model(spec)
    first_of = {region[0]: region for region in regions}
    h, index = model.input, 0
    while index < len(model.blocks):
        if recorder is not None:
            recorder.note_block_input(model.blocks[index][0], h)
        region = first_of.get(index)
        if region is None:
            h = model.blocks[index][1](h)
            index += 1
            continue
        fns = [model.blocks[i][1] for i in region]
        h = checkpoint(_chained(fns), h, preserve_rng_state=preserve_rng_state)
        index = region[-1] + 1
    loss = model.loss(h)
    del h
    begin("backward")
    loss.backward()
    grads = {name: (None if p.grad is None else np.array(p.grad)) for name, p in model.params.items()}
    if model.optimizer is not None:
        begin("optimizer")
        model.optimizer.step()
    return model, loss, grads


def _chained(fns):
    def region(h):
        for fn in fns:
            h = fn(h)
        return h
    return region


def record_regions(spec, regions, preserve_rng_state=True):
    """The trace document of one checkpointed run, and its parameter gradients."""
    reset_addresses()
    recorder = Recorder()
    with listening(recorder):
        model, loss, grads = run_regions(spec, regions, preserve_rng_state, recorder)
    document = build_document(recorder, spec, ENGINE_VERSION, float(loss.data))
    del model, loss
    return document, grads


def grad_mismatch(grads, reference):
    """Max |difference| per parameter against an un-checkpointed reference run (0.0 where bitwise equal)."""
    mismatch = {}
    for name, ref in reference.items():
        got = grads.get(name)
        if ref is None or got is None:
            mismatch[name] = 0.0 if ref is got else float("inf")
        else:
            mismatch[name] = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64)), initial=0.0))
    return mismatch
