"""Spec → forward: the build context layers share, and the top-level blocks; each kind builds itself
(backend/models/kinds/)."""
import math
from contextlib import contextmanager

import numpy as np

from backend.models.kinds import build_layer, build_layers, chain
from backend.tape import parameter, tensor


class BuildContext:
    """What layers share while being built: the seeded generator, dtype, parameters and the causal masks."""

    def __init__(self, rng, dtype, init_std, vocab):
        self.rng, self.dtype, self.init_std, self.vocab = rng, dtype, init_std, vocab
        self.params = {}
        self.cuts = []             # {path, type} per detach / no_grad layer built, in forward order
        self._masks = {}
        self._frozen = False

    @contextmanager
    def freezing(self):
        """Parameters made inside do not require grad (a layer's `"frozen": true`)."""
        previous, self._frozen = self._frozen, True
        try:
            yield
        finally:
            self._frozen = previous

    def cut(self, path, kind):
        """Note a place where the graph is cut (detach) or not recorded (no_grad); the trace reports it."""
        record = {"path": path, "type": kind}
        self.cuts.append(record)
        return record

    def weight(self, name, shape, fan_in, std=None):
        if std is None:
            std = self.init_std if self.init_std is not None else 1.0 / math.sqrt(fan_in)
        return self._param(name, self.rng.normal(0, std, shape))

    def bias(self, name, size):
        values = self.rng.normal(0, self.init_std, (size,)) if self.init_std is not None else np.zeros(size)
        return self._param(name, values)

    def constant_param(self, name, size, value):
        return self._param(name, np.full(size, value))

    def _param(self, name, values):
        p = parameter(values.astype(self.dtype), name=name, requires_grad=not self._frozen)
        self.params[name] = p
        return p

    def causal_mask(self, seq):
        if seq not in self._masks:
            self._masks[seq] = tensor(np.triu(np.ones((seq, seq), dtype=bool), 1), name="causal_mask")
        return self._masks[seq]


def build_blocks(layers, width, ctx):
    """Top-level blocks in forward order, each (path, forward): a repeat contributes one block per iteration.

    Blocks are what checkpoint schedules count as "layers".
    """
    blocks = []
    for i, layer in enumerate(layers):
        path = f"layers[{i}]"
        if layer["type"] == "repeat":
            for j in range(layer["times"]):
                inner, width = build_layers(layer["layers"], width, ctx, f"{path}[{j}]")
                blocks.append((f"{path}[{j}]", chain(inner)))
        else:
            fn, width = build_layer(layer, width, ctx, path)
            blocks.append((path, fn))
    return blocks, width
