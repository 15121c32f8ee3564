"""Checkpoint what-ifs on a real torch model: re-run the step under torch.utils.checkpoint, record it, and set
torch's measured peak beside our planner's prediction made from the un-checkpointed document alone.

    python -m backend.importers.torch MODEL_FILE --checkpoint every_k=1|every_k=N|selective [--blocks a.b,c.d]

Each what-if is a fresh `build()` (the examples seed it), run with each region's first block's forward replaced
for the step (restored afterwards; the user's code is not edited) by checkpoint(..., use_reentrant=False) over
the region's blocks in turn. `every_k=N` makes runs of N consecutive blocks one region; `selective` checkpoints
every block with torch's selective-checkpoint policy (matmul outputs saved, the rest recomputed).
"""
import functools
from contextlib import contextmanager

import torch
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

from backend.importers.torch import record_with
from backend.importers.torch_recorder import TorchRecorder

aten = torch.ops.aten
MUST_SAVE_OPS = (aten.mm, aten.bmm, aten.addmm, aten.baddbmm, aten.matmul, aten.linear)
MAX_EVERY_K = 1024


class CheckpointRequestError(ValueError):
    """A --checkpoint value we do not run; the message names the flag and what it accepts."""


# ----- the request -------------------------------------------------------------------------------
def parse_policy(text):
    """`every_k=N` or `selective` as {"policy", "params"}; CheckpointRequestError names --checkpoint otherwise."""
    text = (text or "").strip()
    if text == "selective":
        return {"policy": "selective", "params": {}}
    name, _, value = text.partition("=")
    if name == "every_k" and value.isdigit() and 1 <= int(value) <= MAX_EVERY_K:
        return {"policy": "every_k", "params": {"k": int(value)}}
    raise CheckpointRequestError(f"--checkpoint {text!r}: give every_k=N (N a whole number from 1 to "
                                 f"{MAX_EVERY_K}) or selective, e.g. --checkpoint every_k=1")


def regions_of(request, n_blocks):
    """Block indices per checkpoint region: runs of k for every_k (the last may be shorter), one per block for
    selective."""
    k = request["params"].get("k", 1)
    return [list(range(start, min(start + k, n_blocks))) for start in range(0, n_blocks, k)]


def save_matmuls(ctx, func, *args, **kwargs):
    """The selective policy: matrix products' outputs are kept; attention, softmax, dropout, elementwise and
    everything else is recomputed."""
    if getattr(func, "overloadpacket", func) in MUST_SAVE_OPS:
        return CheckpointPolicy.MUST_SAVE
    return CheckpointPolicy.PREFER_RECOMPUTE


def context_fn(request):
    if request["policy"] == "selective":
        return functools.partial(create_selective_checkpoint_contexts, save_matmuls)
    return None


# ----- the checkpointed step ---------------------------------------------------------------------
class RegionRecorder(TorchRecorder):
    """The torch recorder for a checkpointed step: a region's nodes hold checkpoint's placeholders, and reading
    their saved tensors would start the recompute early, so their `saved` is left as the region saves: nothing."""

    def __init__(self, **options):
        super().__init__(**options)
        self.region_entries = set()

    def note_region(self, start, end):
        self.region_entries.update(range(start, end))

    def _read_saved(self, node, index):
        if index in self.region_entries:
            entry = self.tape[index]
            entry["backward"] = node.name()
            entry["why"] = f"{node.name()} keeps only checkpoint placeholders: its region is recomputed in backward"
            return
        super()._read_saved(node, index)


@contextmanager
def checkpointed(model, paths, regions, recorder, context=None):
    """Within the block, each region runs under checkpoint(): its first block's forward runs the region's blocks
    in turn (each through its own __call__, so module hooks and scopes still fire), the others pass their input
    through (the region already made it). Every forward is restored on the way out."""
    blocks = [model.get_submodule(path) for path in paths]
    originals = [block.forward for block in blocks]
    running = set()                     # blocks whose region's function is running now (forward or recompute)

    def region_forward(region):
        first, rest = region[0], region[1:]

        def run(*args, **kwargs):
            running.update(region)
            try:
                out = originals[first](*args, **kwargs)
                for b in rest:
                    out = blocks[b](out)
                return out
            finally:
                running.difference_update(region)

        def forward(*args, **kwargs):
            start = len(recorder.tape)
            try:
                return checkpoint(run, *args, use_reentrant=False, **({"context_fn": context} if context else {}),
                                  **kwargs)
            finally:
                if recorder.phase == "forward":
                    recorder.note_region(start, len(recorder.tape))
        return forward

    def passed_through(b):
        def forward(*args, **kwargs):
            if b in running:
                return originals[b](*args, **kwargs)
            return args[0]
        return forward

    for region in regions:
        blocks[region[0]].forward = region_forward(region)
        for b in region[1:]:
            blocks[b].forward = passed_through(b)
    try:
        yield
    finally:
        for block in blocks:
            block.__dict__.pop("forward", None)


def record_checkpointed(step, paths, request, values=False):
    """(document, grads) of one step with `request`'s regions under checkpoint()."""
    model = step[0]
    recorder = RegionRecorder(with_values=values)
    with checkpointed(model, paths, regions_of(request, len(paths)), recorder, context_fn(request)):
        document = record_with(recorder, *step, blocks=paths)
    return document, grads_of(model)


def grads_of(model):
    """Each parameter's gradient as a numpy copy (what backend.planner.execute.grad_mismatch compares)."""
    return {name: None if p.grad is None else p.grad.detach().numpy().copy() for name, p in model.named_parameters()}
