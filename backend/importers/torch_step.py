"""One real PyTorch training step, plain or recorded into the trace document: `run_step`, `record_step`,
`record` + `document_of`, and reading the user's MODEL_FILE (`load_build`, `step_of`, `unpack_build`); a step that cannot
run as given raises mistakes.StepError, one sentence naming what to change.

The command line (backend/importers/torch.py) and the checkpoint what-ifs (torch_checkpoint.py) both record through
this module; it imports neither, so imports go one way.
"""
import contextlib
import gc
import importlib.util
import json
import math
from collections import Counter
from pathlib import Path

import torch

from backend.importers.mistakes import StepError, cpu_only
from backend.importers.torch_blocks import find_blocks
from backend.importers.torch_pipeline import add_receive_buffers, describe_pipeline, is_schedule, run_schedule
from backend.importers.torch_profile import live_by_step, plain_peak, profiled, unowned_allocations
from backend.importers.torch_recorder import LOSS_SCOPE, TorchRecorder, _tensors, batch_names
from backend.importers.torch_storages import is_fake
from backend.importers.torch_regions import watching_checkpoints
from backend.planner.blocks import BlockIndex
from backend.planner.torch_timeline import RECOMPUTE_ON_FIRST_UNPACK
from backend.trace.document import build_document
from backend.trace.document_versions import pack
from backend.trace.memory import covers, lifetimes_of, live_bytes
from backend.trace.records import storage_record


# ----- one step, recorded or plain ---------------------------------------------------------------
def run_step(model, batch, loss_fn=None, optimizer=None, recorder=None):
    """Forward, loss, backward, optimizer step; returns the loss tensor. The same code with and without a
    recorder, so a plain run (profiled, timed, compared) is the recorded run minus the hooks. With a pipeline
    schedule where the loss_fn goes, forward and backward are its micro-batches' (torch_pipeline.run_schedule);
    the loss is the last stage's mean, None on the other stages."""
    begin = recorder.begin if recorder is not None else (lambda phase: None)
    begin("forward")
    if is_schedule(loss_fn):
        with cpu_only("the pipeline's step"):
            loss = run_schedule(loss_fn, batch, recorder)
    else:
        with cpu_only("the model's forward"):
            loss = _forward_loss(model, batch, loss_fn, recorder)
        check_trainable(model, loss)
        if recorder is not None:
            recorder.attach(loss)
        begin("backward")
        loss.backward()
    if recorder is not None:
        recorder.name_grads(model)
    if optimizer is not None:
        begin("optimizer")
        optimizer.step()
        if recorder is not None:
            recorder.name_optimizer_state(model, optimizer)
    begin("done")
    return loss


def warm_up(model, batch, loss_fn=None, optimizer=None, steps=0):
    """`steps` plain training steps before the recorded one (the steady state: the optimizer's state allocated),
    each ending as a training loop's does, its gradients set to None (optimizer.zero_grad())."""
    for _ in range(steps):
        run_step(model, batch, loss_fn, optimizer)
        (optimizer or model).zero_grad(set_to_none=True)


def _forward_loss(model, batch, loss_fn, recorder):
    """The loss, with the model's output gone by the time it returns (as in a training loop's body)."""
    if loss_fn is None:
        return _as_loss(_call(model, batch))
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise StepError("with a loss_fn, batch must be (inputs, target): the step runs "
                         "loss_fn(model(inputs), target)")
    inputs, target = batch
    output = _call(model, inputs)
    if recorder is not None:
        recorder.push_scope(LOSS_SCOPE)
    try:
        return loss_fn(output, target)
    finally:
        if recorder is not None:
            recorder.pop_scope()


def _call(model, inputs):
    if isinstance(inputs, dict):
        return model(**inputs)
    if isinstance(inputs, (tuple, list)):
        return model(*inputs)
    return model(inputs)


def _as_loss(output):
    if isinstance(output, torch.Tensor):
        if output.dim() == 0:
            return output
        raise StepError(f"the model's output is a tensor of shape {list(output.shape)}, not a loss: return a scalar "
                        "(e.g. its .mean()), or give build() a loss_fn to turn the output into one")
    for pick in (lambda o: o["loss"], lambda o: o.loss, lambda o: o[0]):
        try:
            loss = pick(output)
        except (KeyError, AttributeError, TypeError, IndexError):
            continue
        if isinstance(loss, torch.Tensor) and loss.dim() == 0:
            return loss
    raise StepError(f"the model's output (a {type(output).__name__}) is not a loss: without a loss_fn, model(batch) "
                    "must return a scalar tensor, or something with a scalar under ['loss'], .loss or [0]; or give "
                    "build() a loss_fn")


def check_trainable(model, loss):
    """A loss backward can run from: a scalar that requires grad; else a StepError saying what to change."""
    if not isinstance(loss, torch.Tensor):
        raise StepError(f"loss_fn returned a {type(loss).__name__}, not a tensor: return the loss tensor itself "
                        "(not .item() or a float), so backward can run from it")
    if loss.dim() != 0:
        raise StepError(f"loss_fn returned a tensor of shape {list(loss.shape)}, not a scalar: reduce it "
                        "(e.g. reduction='mean', or .mean() on its result)")
    if loss.requires_grad:
        return
    if not any(p.requires_grad for p in model.parameters()):
        raise StepError(f"every parameter of {type(model).__name__} is frozen (requires_grad=False), so the step "
                        "has nothing to train: unfreeze the ones to train, e.g. model.requires_grad_(True) or "
                        "p.requires_grad_(True) on the layers being fine-tuned")
    raise StepError("the loss does not require grad although some parameters do: the forward ran under "
                    "torch.no_grad() or inference_mode(), or the loss was detached; compute it with grad enabled")


# ----- the document ------------------------------------------------------------------------------
def record_step(model, batch, loss_fn=None, optimizer=None, values=False, blocks=None, warmup=0, workspace=True):
    """One training step of `model` on `batch` under PyTorch's hooks, as a trace document (a dict), after
    `warmup` plain steps (see warm_up: the recorded step then starts with the optimizer's state in memory).

    `blocks` are the module paths a checkpoint what-if counts as blocks (default: torch_blocks.find_blocks:
    the longest run of same-class children of a ModuleList or Sequential); the document reports which storage
    enters each, as our engine's driver does. With `workspace` the step is recorded under torch.profiler (its
    CPU memory events), and what the allocator held that no storage of the run is becomes storages of kind
    `workspace`, so the document's peak is the allocator's (summary.measured_peak_bytes, torch.profiler's peak)."""
    warm_up(model, batch, loss_fn, optimizer, warmup)
    measure = workspace and not torch._C._autograd._profiler_enabled()       # a profiler of the caller's sees all
    if not measure:
        recorder, loss = record(model, batch, loss_fn, optimizer, values=values, blocks=blocks)
    else:
        (recorder, loss), events = profiled(lambda: record(model, batch, loss_fn, optimizer, values=values,
                                                           blocks=blocks))
        measured_peak = add_workspace(recorder, events)
    document = document_of(recorder, loss, model, batch, loss_fn, optimizer)
    document["source"]["warmup_steps"] = warmup
    if measure:
        document["summary"]["measured_peak_bytes"] = measured_peak
    return document


def add_workspace(recorder, events):
    """Memory no tensor owns, as storages of kind `workspace`: at each step where torch.profiler saw the allocator
    hold more than the run's storages (MkldnnRnnLayerBackward0's workspace, a softmax's scratch), the difference,
    held for that step, at the address of the largest allocation of no storage's alive then, scoped to the op or
    node that ran. The step's live bytes are then the allocator's most during it (torch_profile.live_by_step).
    Returns torch.profiler's peak of the step (what existed before it included)."""
    storages, n_steps = list(recorder.storages.values()), len(recorder.steps)
    measured = live_by_step({"storages": storages, "steps": recorder.steps}, events)
    ours = live_bytes(lifetimes_of(storages), n_steps)
    unowned = unowned_allocations(storages, n_steps, events)
    for step in range(n_steps):
        excess = int(measured[step] - ours[step])
        if excess <= 0:
            continue
        alive = [a for a in unowned if covers(a[2], a[3], step)]
        address = max(alive, key=lambda a: a[1])[0] if alive else 0
        storage = storage_record(len(recorder.storages), f"0x{address:x}", excess, "workspace", step, setup=False)
        storage["freed"] = step
        entry = recorder.steps[step]["entry"]
        storage["scope"] = recorder.tape[entry]["scope"] if entry is not None else recorder.steps[step]["phase"]
        recorder.storages[storage["id"]] = storage
    return plain_peak(events, sum(st["nbytes"] for st in storages if st["setup"]))


def record(model, batch, loss_fn=None, optimizer=None, values=False, blocks=None, recorder=None):
    """The step under the hooks: (recorder, loss). The hooks note what can only be seen as it happens (ids,
    storages, shapes, a copy of each tensor for its statistics); the rest waits for document_of."""
    recorder = TorchRecorder(with_values=values) if recorder is None else recorder
    recorder.add_model(model, batch_names(batch))
    recorder.add_optimizer(model, optimizer)
    if is_schedule(loss_fn):
        add_receive_buffers(recorder, loss_fn)
    recorder.note_blocks(model, find_blocks(model) if blocks is None else blocks)
    try:
        with recorder, torch.autograd.graph.saved_tensors_hooks(recorder.pack, recorder.unpack), \
                watching_checkpoints(recorder), heap_frozen():
            loss = run_step(model, batch, loss_fn, optimizer, recorder)
    finally:
        recorder.finish()
    return recorder, loss


@contextlib.contextmanager
def heap_frozen():
    """The objects that exist before the step left out of the garbage collector's passes while it runs: the records
    the hooks keep make Python's oldest generation due, and a full pass over a process that imported torch (~300,000
    objects) costs ~100 ms, more than a whole small step. A cycle made in the step is still collected as in a
    plain one; what was frozen is collectable again afterwards. Nothing to do when the caller froze its own heap."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def document_of(recorder, loss, model, batch, loss_fn=None, optimizer=None):
    """The trace document of a recorded step (statistics, live bytes, the peak explanation are derived here)."""
    spec = describe(model, batch, loss_fn, optimizer)
    fake = loss is not None and is_fake(loss)
    with heap_frozen():
        document = build_document(recorder, spec, f"torch {torch.__version__}",
                                  math.nan if fake or loss is None else float(loss.detach()))
    if fake:
        document["loss_text"] = "none: recorded on fake tensors (shapes and bytes, no values)"
    elif loss is None:
        document["loss_text"] = "none on this stage: the last pipeline stage computes the loss"
    document["layers"] = [{"path": name, "type": type(child).__name__, "name": name}
                          for name, child in model.named_children()]
    document["source"] = {"kind": "torch", "torch_version": torch.__version__, "model": type(model).__name__,
                          "loss": spec["loss"]["type"],
                          "optimizer": type(optimizer).__name__ if optimizer is not None else None,
                          "values": bool(recorder.with_values)}
    if is_schedule(loss_fn):
        document["source"]["pipeline"] = describe_pipeline(loss_fn)
    document["summary"]["packed"] = len(recorder.packed)
    document["summary"].update(step_flops(document))
    count_block_entries(document)
    document["checkpoint_regions"] = recorder.regions_document()
    # torch.utils.checkpoint(use_reentrant=False) recomputes a region inside the first of its backward nodes that
    # unpacks a saved tensor, and stops at its last save: the planner predicts this run's schedules in that order
    document["checkpointing"] = {"recompute": RECOMPUTE_ON_FIRST_UNPACK, "early_stop": True}
    return document


def document_text(document):
    """A document as run.json holds it: schema_version 2, as the server sends and stores it, without spaces."""
    return json.dumps(pack(document), separators=(",", ":"))


def write_run(document, path):
    Path(path).write_text(document_text(document))


def step_flops(document):
    """The step's FLOPs beyond the forward's: each backward node's (the ops it ran; a checkpoint's recompute is on
    its own `recompute` tape entries), and the whole step's by source (torch's FlopCounterMode formulas, or ours
    where torch has none)."""
    by_source = Counter()
    for entry in document["tape"]:
        by_source[entry["flops_source"]] += entry["flops"]
    for item in document["sweep"]:
        by_source.update(item["flops_by_source"])
    return {"backward_flops": sum(item["flops"] for item in document["sweep"]), "flops_by_source": dict(by_source)}


def count_block_entries(document):
    """Each reported block's `entries`: the forward tape entries inside it (what a checkpoint of it re-runs)."""
    index = BlockIndex([block["path"] for block in document["blocks"]])
    counts = Counter(index.block_of(e["scope"]) for e in document["tape"] if e["phase"] == "forward")
    for i, block in enumerate(document["blocks"]):
        block["entries"] = counts.get(i, 0)


def describe(model, batch, loss_fn, optimizer):
    """The document's `spec`: what the run was, in the fields our own specs have (read-only for an import)."""
    params = list(model.parameters())
    tensors = _tensors(batch)
    pipeline = {"accumulate": loss_fn._n_microbatches} if is_schedule(loss_fn) else {}
    return {"name": type(model).__name__, "seed": None, **pipeline,
            "dtype": str(params[0].dtype).replace("torch.", "") if params else "float32",
            "batch": int(tensors[0].shape[0]) if tensors and tensors[0].dim() else 1,
            "input": {"kind": "torch", "shapes": [list(t.shape) for t in tensors]},
            "layers": [{"type": type(child).__name__, "name": name} for name, child in model.named_children()],
            "loss": {"type": _loss_name(loss_fn)}, "optimizer": optimizer_spec(optimizer)}


def _loss_name(loss_fn):
    if loss_fn is None:
        return "model"
    if is_schedule(loss_fn):        # a pipeline's loss is its schedule's loss_fn
        loss_fn = loss_fn._loss_fn
    return getattr(loss_fn, "__name__", None) or type(loss_fn).__name__


def optimizer_spec(optimizer):
    """SGD, Adam and AdamW in our spec's words (the planner and the verdicts read them); others by name."""
    if optimizer is None:
        return {"type": "none"}
    group = optimizer.param_groups[0]
    kind = type(optimizer).__name__.lower()
    lr = float(group.get("lr", 0.0))
    if kind == "sgd":
        return {"type": "sgd", "lr": lr, "momentum": float(group["momentum"]),
                "weight_decay": float(group["weight_decay"]), "nesterov": bool(group["nesterov"])}
    if kind in ("adam", "adamw"):
        return {"type": kind, "lr": lr, "betas": [float(b) for b in group["betas"]],
                "weight_decay": float(group["weight_decay"])}
    return {"type": "other", "name": type(optimizer).__name__, "lr": lr}


# ----- the user's file ---------------------------------------------------------------------------
def load_build(path):
    """Import MODEL_FILE and return its build() (the user's own code, run here on the user's machine)."""
    path = Path(path)
    if not path.is_file():
        raise SystemExit(f"{path}: no such file")
    module_spec = importlib.util.spec_from_file_location(f"tapescope_model_{path.stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    with cpu_only(str(path)):
        module_spec.loader.exec_module(module)
    build = getattr(module, "build", None)
    if not callable(build):
        raise SystemExit(f"{path}: defines no build(); it must return (model, batch[, loss_fn[, optimizer]])")
    return build


def step_of(build):
    """(model, batch, loss_fn, optimizer) from a call of the user's build(), its CUDA-on-a-CPU-machine said in words."""
    with cpu_only("build()"):
        built = build()
    return unpack_build(built)


def unpack_build(built):
    """(model, batch, loss_fn, optimizer) from what build() returned, with a sentence when it is wrong."""
    if isinstance(built, dict):        # a pipeline's schedule (torch_pipeline) goes where the loss_fn does
        parts = (built.get("model"), built.get("batch"), built.get("loss_fn", built.get("schedule")),
                 built.get("optimizer"))
    elif isinstance(built, (tuple, list)) and 2 <= len(built) <= 4:
        parts = (*built, None, None)[:4]
    else:
        raise SystemExit("build() must return (model, batch[, loss_fn[, optimizer]]) or a dict with those keys")
    if not isinstance(parts[0], torch.nn.Module):
        raise SystemExit(f"build()'s model is a {type(parts[0]).__name__}, not a torch.nn.Module")
    return parts
