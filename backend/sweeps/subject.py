"""What the modes view differentiates: a built model's input and its two functions, input → logits and input → loss.

The Jacobians are taken with respect to the model's input batch (the parameters held constant), so a sweep's
count is the input's or the output's number of elements. Token ids are integers with no derivative: a token
model is differentiated with respect to its first block's output (the embedded tokens) instead.
"""
from dataclasses import dataclass
from typing import Callable

import numpy as np

import backend.tape as T
from backend.models import Model
from backend.models.network import chain
from backend.models.spec import input_shape, plan
from backend.tape import events, grad_mode


@dataclass
class Subject:
    model: Model
    x: T.Tensor                   # the point the Jacobians are taken at
    input_name: str               # what x is, in words
    logits: Callable              # x -> the model's output
    loss: Callable                # x -> the scalar loss
    logits_shape: tuple
    entry_offset: int             # tape entries the trace records before x (the embedding, for tokens)

    def reseed(self):
        """Every sweep draws the same dropout masks: the Jacobian of one function, not of a new draw each time."""
        T.manual_seed(self.model.spec["seed"])


def subject_of(spec):
    """The Subject of a normalized spec: its model built (seeded) with every parameter held constant."""
    model = Model(spec)
    blocks = [fn for _path, fn in model.blocks]
    x, input_name, offset = model.input, "the input batch x", 0
    if spec["input"]["kind"] == "tokens":
        first, blocks = blocks[0], blocks[1:]
        x, offset = _embedded(model, first)
        input_name = "the embedded tokens (token ids are integers: they have no derivative)"
    for param in model.params.values():
        param.requires_grad = False
    logits = chain(blocks)
    with grad_mode.no_grad():
        T.manual_seed(spec["seed"])
        logits_shape = logits(x).shape
    return Subject(model, x, input_name, logits, lambda h: model.loss(logits(h)), tuple(logits_shape), offset)


def _embedded(model, first_block):
    """The first block's output, and how many tape entries it records in a trace (params requiring grad)."""
    recorded = []
    with events.listening(lambda kind, payload: recorded.append(kind) if kind == events.RECORD else None):
        h = first_block(model.input)
    return T.tensor(np.array(h.data), name="embedded"), recorded.count("record")


def sweep_counts(spec):
    """{"inputs": n, "logits": m} for a normalized spec, from its shapes alone (nothing allocated): the sweeps each
    mode will take, which is what the work cap prices."""
    if spec["input"]["kind"] == "tokens":
        inputs = spec["batch"] * spec["input"]["seq"] * spec["layers"][0]["dim"]
    else:
        inputs = int(np.prod(input_shape(spec)))
    return {"inputs": inputs, "logits": int(np.prod(plan(spec).output_shape))}
