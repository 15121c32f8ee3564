"""Freezing part of a model, as a spec edit: the first or the last half of its parameter blocks made frozen.

A block is what checkpoint schedules count (backend/models/network.py: one per top-level layer, one per
iteration of a top-level repeat); a repeat that the half boundary crosses is split in two repeats, so the
blocks, the parameter values (drawn in the same order) and the checkpoint requests stay the same.
"""
import copy

from backend.models.kinds import LAYER_KINDS


def has_params(layer):
    return LAYER_KINDS[layer["type"]].params or any(has_params(inner) for inner in layer.get("layers", ()))


def frozen(layer):
    """A copy of `layer` with every layer that owns parameters marked frozen (wrappers recursed into)."""
    layer = copy.deepcopy(layer)
    _mark(layer)
    return layer


def _mark(layer):
    if LAYER_KINDS[layer["type"]].params:
        layer["frozen"] = True
    for inner in layer.get("layers", ()):
        _mark(inner)


def parameter_blocks(spec):
    """How many blocks own parameters."""
    return sum(_blocks_of(layer)[1] for layer in spec["layers"])


def _blocks_of(layer):
    """(blocks, of which with parameters) of one top-level layer."""
    times = layer["times"] if layer["type"] == "repeat" else 1
    return times, times if has_params(layer) else 0


def freeze_half(spec, which):
    """A copy of a normalized spec with its first ("first") or last ("last") n // 2 parameter blocks frozen,
    n the count of blocks with parameters; None when n < 2 (there is no half to freeze)."""
    n = parameter_blocks(spec)
    if n < 2:
        return None
    half = n // 2
    chosen = range(half) if which == "first" else range(n - half, n)
    edited, seen = [], 0
    for layer in spec["layers"]:
        blocks, with_params = _blocks_of(layer)
        if not with_params:
            edited.append(copy.deepcopy(layer))
            continue
        flags = [seen + i in chosen for i in range(blocks)]
        seen += blocks
        edited.extend(_split(layer, flags))
    return {**copy.deepcopy(spec), "layers": edited}


def _split(layer, flags):
    """One top-level layer as runs of blocks that are all frozen or all not: a repeat splits at a change."""
    if layer["type"] != "repeat":
        return [frozen(layer) if flags[0] else copy.deepcopy(layer)]
    runs, start = [], 0
    for i in range(1, len(flags) + 1):
        if i == len(flags) or flags[i] != flags[start]:
            part = {**copy.deepcopy(layer), "times": i - start}
            runs.append(frozen(part) if flags[start] else part)
            start = i
    return runs
