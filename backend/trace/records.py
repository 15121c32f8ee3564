"""The records a recorder collects, built in one place: both recorders (backend/trace/recorder.py for our engine,
backend/importers/torch_recorder.py for a real PyTorch step) make their storages, tensors, tape entries, steps,
sweep items and accumulations here, and `RecordedRun` declares what the document builder reads from a recorder.

A constructor fills what every record of its kind starts with (a storage's `freed`, a tensor's `saved_by`, an
entry's `output` and `saved`, a sweep item's lists) and takes the rest by name; `**extra` fields (a torch entry's
`flops_source`, a view's `view`, a step's `op`) come after them, in the order given, as the document keeps them.
"""
from typing import Protocol, runtime_checkable

SMALL_TENSOR_ELEMENTS = 1024     # tensors this small carry their values (heatmaps): always ours, with --values torch's


@runtime_checkable
class RecordedRun(Protocol):
    """What backend/trace/document.py's `build_document` and `peak_of` read from a recorder, and nothing else
    (tests/trace/test_records.py builds documents from both recorders through a proxy that allows only these)."""

    tensors: dict            # id -> tensor record (tensor_record)
    storages: dict           # any key -> storage record (storage_record); read in the order of their ids
    tape: list               # entry records (entry_record), in record order: an entry's index is its position
    steps: list              # step records (step_record), numbered across phases
    sweep: list              # sweep items (sweep_item), one per backward node run
    dependencies: dict       # tape index -> how many consumers backward counted for it when it began
    blocks: list             # block records (block_record): which storage enters each checkpointable block
    scaler: object           # the loss scaler's summary under mixed precision, else None
    values: object           # a backend.trace.values.ValueTable (or one keeping nothing): `fill()` describes them


def storage_record(storage_id, address, nbytes, kind, born, setup):
    """One allocation: `freed` is the step during which it went back, `dropped` when its last Tensor went."""
    return {"id": storage_id, "address": address, "nbytes": nbytes, "kind": kind, "born": born, "freed": None,
            "dropped": None, "setup": setup}


def tensor_record(uid, name, kind, shape, dtype, storage, born, produced_by, scope, **extra):
    """A tensor over `storage` (its storage record: nbytes, id and address are the storage's)."""
    return {"id": uid, "name": name, "kind": kind, "shape": list(shape), "dtype": dtype, "nbytes": storage["nbytes"],
            "storage": storage["id"], "address": storage["address"], "born": born, "freed": None, "saved_by": [],
            "produced_by": produced_by, "scope": scope, **extra}


def entry_record(index, op, family, backward, inputs, scope, flops, why, attrs, phase, **extra):
    """One tape entry: its output and saves are filled in as the run goes on."""
    return {"index": index, "op": op, "family": family, "backward": backward, "inputs": inputs, "output": None,
            "saved": [], "scope": scope, "flops": flops, "why": why, "attrs": attrs, "phase": phase, **extra}


def step_record(index, phase, entry, **extra):
    """One step of the run (the entry it runs, or None for a step with no entry of its own)."""
    return {"index": index, "phase": phase, "entry": entry, **extra}


def sweep_item(step, entry, adjoint, reads, **extra):
    """The backward node of tape entry `entry` (its record) running at `step`, with the adjoint it received (an
    adjoint_record or None) and the saves it reads; contributions, accumulations and the rest fill in as it runs."""
    return {"step": step, "entry": entry["index"], "op": entry["op"], "backward": entry["backward"],
            "adjoint": adjoint, "reads": reads, "why": entry["why"], "contributions": [], "accumulations": [],
            "freed": [], "ready": [], "pending": {}, **extra}


def adjoint_record(tensor, shape):
    return {"tensor": tensor, "shape": list(shape)}


def contribution(to, grad, shape):
    """A gradient a backward node hands to tensor `to`."""
    return {"to": to, "grad": grad, "shape": list(shape)}


def accumulation(tensor, parts, total, into, **extra):
    """Gradients summed for `tensor`: into a buffer (several consumers) or into a leaf's .grad."""
    return {"tensor": tensor, "parts": parts, "total": total, "into": into, **extra}


def block_record(path, input_storage, **extra):
    """A checkpointable block and the storage that enters it (what a checkpoint of it keeps)."""
    return {"path": path, "input_storage": input_storage, **extra}
