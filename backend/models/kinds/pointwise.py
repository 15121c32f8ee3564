"""Layers that act element by element and own no parameters: activations, dropout, and detach (a stop-gradient)."""
import math

import backend.tape as T
from backend.models.fields import Field
from backend.models.kinds.base import Kind, register, scoped

INPLACE = Field("inplace", "boolean", "relu_: overwrite the input instead of allocating (legal unless an earlier op "
                "saved that input for its backward: then backward raises torch's version error)",
                default=False, optional=True)


def _plan_same_shape(layer, shape, path, problems, tally):
    tally.op(math.prod(shape))
    return shape


def _activation(fn):
    def build(layer, width, ctx, path):
        return scoped(path, fn), width
    return build


def _plan_relu(layer, shape, path, problems, tally):
    if layer.get("inplace") and tally.on_input and tally.input_requires_grad and tally.grad_enabled:
        problems.add(f"{path}.inplace", "relu_ here would overwrite the model's input, which loss.gradient_penalty "
                                        "differentiates (torch refuses an in-place op on a leaf that requires grad): "
                                        "untick inplace, or put a layer before it")
    return _plan_same_shape(layer, shape, path, problems, tally)


def _build_relu(layer, width, ctx, path):
    return scoped(path, (lambda h: h.relu_()) if layer.get("inplace") else T.relu), width


register(Kind("relu", "max(x, 0): saves its output (relu_ too)", _plan_relu, _build_relu, fields=(INPLACE,)))
register(Kind("gelu", "x·Φ(x): saves its input", _plan_same_shape, _activation(T.gelu)))
register(Kind("tanh", "tanh(x): saves its output", _plan_same_shape, _activation(T.tanh)))
register(Kind("sigmoid", "σ(x): saves its output", _plan_same_shape, _activation(T.sigmoid)))


def _plan_dropout(layer, shape, path, problems, tally):
    tally.op(math.prod(shape), itemsize=tally.itemsize + 1)          # the output and its bool mask
    return shape


def _build_dropout(layer, width, ctx, path):
    return scoped(path, lambda h: T.dropout(h, layer["p"])), width


register(Kind("dropout", "zeroes each element with probability p (scaling the rest by 1/(1-p)): saves a bool mask",
              _plan_dropout, _build_dropout, fields=(
                  Field("p", "number", "the probability of zeroing an element", default=0.1, low=0.0, high=1.0,
                        high_open=True, step=0.05),
              )))


def _plan_detach(layer, shape, path, problems, tally):
    tally.grad_flows = False          # a view, no new bytes: nothing before it gets a gradient through here
    tally.input_cut = tally.input_cut or f"{path} (detach)"
    return shape


def _build_detach(layer, width, ctx, path):
    cut = ctx.cut(path, "detach")

    def detach(h):
        out = h.detach()
        cut["tensor"] = out.uid
        return out
    return detach, width


register(Kind("detach", "stop-gradient: the same values, cut from the graph; the layers before it get no "
              "gradient through it and nothing after it saves for them", _plan_detach, _build_detach))
