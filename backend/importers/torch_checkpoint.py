"""Checkpoint what-ifs on a real torch model: re-run the step under torch.utils.checkpoint, record it, and set
torch's measured peak beside our planner's prediction made from the un-checkpointed document alone.

    python -m backend.importers.torch MODEL_FILE --checkpoint every_k=1|every_k=N|selective [--blocks a.b,c.d]

Each what-if is a fresh `build()` (the examples seed it), run with each region's first block's forward replaced
for the step (restored afterwards; the user's code is not edited) by checkpoint(..., use_reentrant=False) over
the region's blocks in turn. `every_k=N` makes runs of N consecutive blocks one region; `selective` checkpoints
every block with torch's selective-checkpoint policy (matmul outputs saved, the rest recomputed).
"""
import functools
import re
from contextlib import contextmanager

import torch
from torch.utils.checkpoint import CheckpointError, CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

from backend.importers.mistakes import ImportMistake
from backend.importers.torch_step import record_step, step_of
from backend.importers.torch_blocks import block_runs, blocks_for
from backend.models.caps import cap
from backend.planner.execute import grad_mismatch
from backend.planner.policies import every_k
from backend.planner.torch_timeline import TorchBase, predict_live_bytes, recompute_flops
from backend.trace.memory import peak

aten = torch.ops.aten
MUST_SAVE_OPS = (aten.mm, aten.bmm, aten.addmm, aten.baddbmm, aten.matmul, aten.linear)
MUST_SAVE_NAMES = tuple(op.__name__ for op in MUST_SAVE_OPS)      # as the tape names ops ("addmm")


class CheckpointRequestError(ImportMistake):
    """A --checkpoint value we do not run; the message names the flag and what it accepts."""


class RecomputeMismatch(ImportMistake):
    """A region torch cannot re-run as its forward ran: its recompute saved other tensors (torch's CheckpointError),
    or its blocks do not chain."""


USE_CACHE_OFF = ("use_cache turned off (config.use_cache = False) for the recorded step and every what-if: a "
                 "decoder's KV cache makes a checkpoint's recompute save other tensors than its forward did")


def cache_off(model):
    """Set use_cache = False on every config in the model (a Hugging Face model's and its stacks' copies), so a
    decoder keeps no KV cache: a training step needs none, and with one a block's recompute saves other tensors
    than its forward (torch's CheckpointError). True if any was on."""
    turned_off = False
    for module in model.modules():
        config = getattr(module, "config", None)
        if getattr(config, "use_cache", None):
            config.use_cache = False
            turned_off = True
    return turned_off


# ----- the request -------------------------------------------------------------------------------
def parse_policies(text):
    """`--checkpoint every_k=1,selective`: one request per comma-separated policy, in order, each once."""
    requests = [parse_policy(part) for part in (text or "").split(",")]
    unique = list({(r["policy"], r["params"].get("k")): r for r in requests}.values())
    if len(unique) > cap("checkpoint_policies"):
        raise CheckpointRequestError(f"--checkpoint names {len(unique)} policies; at most {cap('checkpoint_policies')} "
                                     "(each is a full training step of your model)")
    return unique


def parse_policy(text):
    """`every_k=N` or `selective` as {"policy", "params"}; CheckpointRequestError names --checkpoint otherwise."""
    text = (text or "").strip()
    if text == "selective":
        return {"policy": "selective", "params": {}}
    name, _, value = text.partition("=")
    if name == "every_k" and value.isdigit() and 1 <= int(value) <= cap("every_k"):
        return {"policy": "every_k", "params": {"k": int(value)}}
    raise CheckpointRequestError(f"--checkpoint {text!r}: give every_k=N (N a whole number from 1 to "
                                 f"{cap('every_k')}) or selective, e.g. --checkpoint every_k=1")


def regions_of(request, n_blocks, runs=None):
    """Block indices per checkpoint region: runs of k for every_k (the last of a run of blocks may be shorter: a
    region never crosses from one run of blocks into the next, see torch_blocks.block_runs), one per block for
    selective."""
    k = request["params"].get("k", 1)
    regions, start = [], 0
    for length in runs or [n_blocks]:
        regions += [[start + b for b in region] for region in every_k(length, k)]
        start += length
    return regions


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
@contextmanager
def checkpointed(model, paths, regions, context=None):
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
                    if not isinstance(out, torch.Tensor):
                        raise RecomputeMismatch(
                            f"--checkpoint every_k={len(region)}: {paths[b - 1]} returns a {type(out).__name__}, not "
                            f"the tensor {paths[b]} takes next (x = block(x)), so its blocks do not chain into one "
                            "region: use every_k=1 or selective, which checkpoint each block on its own")
                    out = blocks[b](out)
                return out
            finally:
                running.difference_update(region)

        def forward(*args, **kwargs):
            return checkpoint(run, *args, use_reentrant=False, **({"context_fn": context} if context else {}),
                              **kwargs)
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


def record_checkpointed(step, paths, request, values=False, warmup=0):
    """(document, grads) of one step with `request`'s regions under checkpoint() (its warm-up steps too); a
    recompute that saves other tensors than its forward is a RecomputeMismatch, one sentence."""
    model = step[0]
    cache_off(model)
    regions = regions_of(request, len(paths), block_runs(paths))
    try:
        with checkpointed(model, paths, regions, context_fn(request)):
            document = record_step(*step, values=values, blocks=paths, warmup=warmup)
    except CheckpointError as error:
        raise RecomputeMismatch(
            f"--checkpoint {flag_of(request)}: torch's checkpoint re-ran a region of {', '.join(paths)} and it "
            f"saved other tensors than its forward did ({_mismatch_words(error)}), so the block's forward does not "
            "depend on its inputs alone (a cache, a counter or a flag it keeps changes between the two runs): make "
            "it depend on its inputs only, or name other blocks with --blocks") from None
    return document, grads_of(model)


def _mismatch_words(error):
    """"51 vs 47 tensors saved" from torch's CheckpointError, else its first line."""
    counts = re.findall(r"saved during (?:the original )?(?:forward|recomputation): (\d+)", str(error))
    if len(counts) == 2:
        return f"{counts[0]} vs {counts[1]} tensors saved"
    return str(error).splitlines()[0].removeprefix("torch.utils.checkpoint: ")


def grads_of(model):
    """Each parameter's gradient as a numpy copy (what backend.planner.execute.grad_mismatch compares)."""
    return {name: None if p.grad is None else p.grad.detach().numpy().copy() for name, p in model.named_parameters()}


# ----- the what-ifs, attached to the plain run's document ----------------------------------------
def checkpoint_what_ifs(build, policy_text, blocks_text=None, values=False, warmup=0):
    """The plain step's document with `schedules`: no checkpointing, then each --checkpoint policy, each run by
    torch (a fresh build()) and recorded, beside our planner's prediction from the plain document alone."""
    return what_ifs(build, parse_policies(policy_text), blocks_text, values, warmup).document


class WhatIfs:
    """The plain step (its document, block paths and gradients) and each checkpointed run, as recorded."""

    def __init__(self, document, paths, grads):
        self.document, self.paths, self.grads = document, paths, grads
        self.runs = []                      # (request, executed document, gradients)


def what_ifs(build, requests, blocks_text=None, values=False, warmup=0):
    """Record the plain step and every request's checkpointed step, each after `warmup` plain steps; attach their
    schedules to the plain document."""
    step = step_of(build)
    model = step[0]
    paths = blocks_for(model, blocks_text)
    use_cache_was_on = cache_off(model)     # before the plain step too: prediction and measurement run one code path
    found = WhatIfs(record_step(*step, values=values, blocks=paths, warmup=warmup), paths, grads_of(model))
    if use_cache_was_on:
        found.document["source"]["changed"] = {"use_cache": {"from": True, "to": False, "why": USE_CACHE_OFF}}
    base = TorchBase.from_document(without_workspace(found.document))
    schedules = [schedule_of({"policy": "none", "params": {}}, base, paths, found.document, found.grads, found.grads)]
    for request in requests:
        executed, grads = record_checkpointed(step_of(build), paths, request, warmup=warmup)
        found.runs.append((request, executed, grads))
        schedules.append(schedule_of(request, base, paths, executed, grads, found.grads))
    found.document.update(schedule=schedules[0], schedules=schedules, pareto=[])
    return found


def flag_of(request):
    """A request as --checkpoint takes it: "every_k=2", "selective"."""
    return request["policy"] + (f"={request['params']['k']}" if "k" in request["params"] else "")


def without_workspace(document):
    """The document as the predictor reads it: its storages without the workspace torch.profiler measured (a
    kernel's scratch, which the predictor does not place in a checkpointed run's recompute); they are the last
    storages and no tensor's, so every other id stays where it was."""
    return {**document, "storages": [st for st in document["storages"] if st["kind"] != "workspace"]}


def storage_peaks(document):
    """(peak, peak before the update) of a run's storages, without its workspace: what the predictor predicts."""
    live = [(s["live_bytes"] - s["by_kind"].get("workspace", 0), s["phase"]) for s in document["steps"]]
    return max(b for b, _ in live), max(b for b, phase in live if phase in ("forward", "backward"))


def schedule_label(schedule):
    """"every_k k=2", "selective": how the terminal and the bench name a schedule (as the page's scheduleLabel)."""
    return schedule["policy"] + (f" k={schedule['params']['k']}" if "k" in schedule["params"] else "")


def schedule_of(request, base, paths, executed, grads, base_grads):
    """One schedule in the fields our engine's schedules have, plus torch's measured figures beside ours."""
    regions = regions_of(request, len(paths), block_runs(paths)) if request["policy"] != "none" else []
    saved_ops = MUST_SAVE_NAMES if request["policy"] == "selective" else ()
    live, phases = predict_live_bytes(base, regions, saved_ops)
    predicted, _ = peak(live)
    before_update = [bytes_ for bytes_, phase in zip(live, phases) if phase in ("forward", "backward")]
    flops = recompute_flops(base, regions, saved_ops)
    mismatch = grad_mismatch(grads, base_grads)
    executed_peak, executed_backward_peak = storage_peaks(executed)
    return {
        "policy": request["policy"], "params": request["params"], "preserve_rng_state": True,
        "regions": [[paths[b] for b in region] for region in regions],
        "block_regions": regions, "recompute_entries": [],
        "predicted_peak_bytes": predicted, "executed_peak_bytes": executed_peak,
        # executed_*: the run's storages without workspace, as predicted; the run's whole peak (workspace in) and
        # torch.profiler's peak of the allocator over it (None when the caller's profiler was on)
        "recorded_peak_bytes": executed["summary"]["peak_bytes"],
        "measured_peak_bytes": executed["summary"].get("measured_peak_bytes"),
        "predicted_error": (predicted - executed_peak) / executed_peak,
        "predicted_backward_peak_bytes": int(max(before_update)),
        "executed_backward_peak_bytes": executed_backward_peak,
        "recompute_flops": flops, "overhead": flops / (sum(base.flops) or 1),
        "grads_match": all(v == 0.0 for v in mismatch.values()), "grad_mismatch": mismatch,
        "verdict": executed["summary"]["peak"]["verdict"], "executed_by": f"torch {torch.__version__}",
    }
