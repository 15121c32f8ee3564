"""Model specs: validation with every problem's path, normalization with defaults, and the size caps.

A spec over a cap is refused here, from shape arithmetic alone, before anything is allocated.
"""
import numpy as np

from backend.models import fields as f
from backend.models.caps import cap
from backend.models.errors import CapError, SpecError
from backend.models.kinds import LAYER_KINDS, check_layers, plan_layers
from backend.models.tally import Tally
from backend.models.training import ACCUMULATE, check_training, read_precision
from backend.problems import Problems
from backend.tape import OPS

DTYPES = ("float32", "float64", "float16")

# The top-level fields of a spec beside input, layers, loss and optimizer, declared once (GET /api/schema
# serves them). A new top-level knob is one Field here (or a Variants below for an object with options).
TOP_LEVEL_FIELDS = (
    f.Field("name", "text", "the model's name, shown in titles and snapshots", default="model", cap="name_length"),
    f.Field("seed", "integer", "seeds the input, the weights and dropout: the same seed traces the same run",
            default=0, low=0, high=2**31 - 1),
    f.Field("dtype", "choice", "the element type of inputs, weights and activations", default="float32",
            options=DTYPES),
    f.Field("batch", "integer", "rows in the input batch: activations grow with it, weights do not", default=1,
            low=1, cap="batch", step=1),
    f.Field("init_std", "number", "the weights' init standard deviation (default: 1/√fan_in, biases 0)",
            low=1e-6, high=10.0, optional=True),
    f.Field("description", "text", "what the model shows", high=400, optional=True),
    ACCUMULATE,
)

INPUT = f.Variants("input", "kind", "what the model reads", {
    "features": ("a [batch, size] batch of real features, uniform in [-1, 1)", (
        f.Field("size", "integer", "features per row", default=1, low=1, cap="features"),)),
    "tokens": ("a [batch, seq] batch of token ids: the first layer must be an embedding", (
        f.Field("vocab", "integer", "how many distinct token ids", default=50, low=2, cap="vocab"),
        f.Field("seq", "integer", "tokens per row: attention's scores grow with its square", default=16, low=1,
                cap="seq", step=1))),
}, default="features")

LOSS = f.Variants("loss", "type", "the scalar backward starts from", {
    "mse": ("mean squared error against a target", (
        f.Field("target", "choice", "square: x² (the output must keep the input's shape); zeros; random normal",
                default="zeros", options=("square", "zeros", "random")),)),
    "cross_entropy": ("softmax cross-entropy against random class ids: the last width is the class count", ()),
    "sum": ("the sum of the output's elements", ()),
}, default="sum", groups=(
    f.Group("gradient_penalty", "adds λ·mean over rows of (‖∂loss/∂x_row‖ − 1)², WGAN-GP's penalty: backward is "
            "recorded (create_graph), then differentiated again, so the first backward's saved tensors count too", (
                f.Field("weight", "number", "λ, the penalty's weight", default=10.0, low=0, cap="penalty_weight",
                        hint="WGAN-GP uses 10"),)),))

_LR = f.Field("lr", "number", "learning rate", default=1e-3, low=0, high=10, hint="such as 0.001 or 0.1")
_BETAS = f.Field("betas", "pair", "the moments' decay rates (β₁ for m, β₂ for v)", default=(0.9, 0.999), low=0,
                 high=1, high_open=True, hint="the moments' decay rates; 0.9 and 0.999 are usual")


def _weight_decay(default, help):
    return f.Field("weight_decay", "number", help, default=default, low=0, high=1,
                   hint="0 turns it off; 0.01 is usual")


# torch.optim's hyperparameters with torch's defaults (lr 1e-3; AdamW's weight_decay 0.01, others' 0).
OPTIMIZER = f.Variants("optimizer", "type", "the step after backward, and the state it keeps", {
    "none": ("no optimizer step: the run ends after backward", ()),
    "sgd": ("state: none, unless momentum > 0: then one buffer the size of each weight", (
        _LR,
        f.Field("momentum", "number", "the share of the last update carried into this one (0.9 is usual; 0 is "
                "plain SGD)", default=0.0, low=0, high=1, high_open=True,
                hint="0.9 is usual; 0 turns momentum off"),
        _weight_decay(0.0, "L2: weight_decay·weight is added to the gradient"),
        f.Field("nesterov", "boolean", "Nesterov momentum (needs momentum > 0)", default=False))),
    "adam": ("state: m and v, running means of the gradient and of its square: two buffers the size of each "
             "weight; weight decay is L2, added to the gradient", (
                 _LR, _BETAS, _weight_decay(0.0, "L2: weight_decay·weight is added to the gradient"))),
    "adamw": ("state: m and v, running means of the gradient and of its square: two buffers the size of each "
              "weight; weight decay is decoupled: it shrinks the weights directly", (
                  _LR, _BETAS, _weight_decay(0.01, "decoupled: each step multiplies the weights by "
                                                   "1 − lr·weight_decay"))),
    "adam8bit": ("Adam with m and v stored as one byte each on a dynamic (exponent + fraction) code, one "
                 "float32 absmax per 2,048-element block: state 2 B per weight instead of 8; weight decay is L2", (
                     _LR, _BETAS, _weight_decay(0.0, "L2: weight_decay·weight is added to the gradient"))),
}, default="none", ignored=("lr",))

TOP_LEVEL = {*(field.name for field in TOP_LEVEL_FIELDS), "input", "layers", "loss", "optimizer", "precision"}


def validate_spec(spec):
    """Return the normalized spec, or raise SpecError with every problem (CapError when over a cap)."""
    problems = Problems()
    spec = f.mapping(spec, "spec", problems)
    if problems:
        raise SpecError(problems)
    f.unknown_keys(spec, TOP_LEVEL, "", problems)
    normalized = {}
    f.read_fields(TOP_LEVEL_FIELDS, spec, "", problems, normalized)
    normalized.update({
        "input": INPUT.read(spec.get("input"), problems),
        "layers": check_layers(spec.get("layers"), "layers", problems, depth=0),
        "loss": _read_loss(spec.get("loss", {"type": "sum"}), problems),
        "optimizer": _check_optimizer(spec.get("optimizer", {"type": "none"}), problems),
    })
    precision = read_precision(spec, problems)
    if precision is not None:
        normalized["precision"] = precision
    if problems:
        raise SpecError(problems)
    check_training(normalized, problems)
    _check_penalty_fits(normalized, problems)
    if problems:
        raise SpecError(problems)
    tally = plan(normalized, problems)
    if problems:
        raise SpecError(problems)
    _enforce_caps(tally, normalized.get("accumulate", 1))
    return normalized


def input_shape(spec):
    source = spec["input"]
    if source["kind"] == "tokens":
        return (spec["batch"], source["seq"])
    return (spec["batch"], source["size"])


def plan(spec, problems=None):
    """Shape-infer the whole model: the Tally of entries and bytes, and `tally.output_shape`."""
    problems = Problems() if problems is None else problems
    vocab = spec["input"]["vocab"] if spec["input"]["kind"] == "tokens" else 0
    penalized = "gradient_penalty" in spec["loss"]
    tally = Tally(np.dtype(spec["dtype"]).itemsize, vocab, input_requires_grad=penalized)
    tally.op(int(np.prod(input_shape(spec))), entries=0)            # the input batch is a tensor too
    shape = plan_layers(spec["layers"], input_shape(spec), "layers", problems, tally, tokens=vocab)
    tally.output_shape = shape
    if shape is not None:
        _check_loss_fits(spec, shape, problems)
        tally.op(int(np.prod(shape)), entries=3)
        if penalized:
            tally.add_recorded_backward()
            if tally.input_cut is not None:
                problems.add("loss.gradient_penalty", f"differentiates the loss with respect to the input, but "
                                                      f"{tally.input_cut} cuts the input off from the loss: remove "
                                                      "that layer or loss.gradient_penalty")
        if tally.param_elements == 0:
            problems.add("layers", "have no parameters, so backward has nothing to differentiate: "
                                   "add a linear, embedding or norm layer")
        elif not tally.grad_flows:
            problems.add("layers", "leave nothing before the loss that requires grad (every parameter is frozen, "
                                   "under no_grad or before a detach), so backward has nothing to differentiate: "
                                   "unfreeze a layer after the last detach or no_grad")
    if problems and shape is None and not any(p["path"].startswith("layers") for p in problems):
        problems.add("layers", "the layers do not fit the input")
    return tally


def _read_loss(value, problems):
    """loss.type's own fields, and on any of them an optional gradient penalty (both declared in LOSS)."""
    return LOSS.read(value, problems)


def _check_penalty_fits(spec, problems):
    """A gradient penalty needs a differentiable input and a model whose every vjp can be recorded."""
    if "gradient_penalty" not in spec["loss"]:
        return
    if spec.get("accumulate", 1) > 1 or "precision" in spec:
        problems.add("loss.gradient_penalty", "cannot be combined with accumulate or precision yet (the recorded "
                                              "backward runs once, in float32): remove one of them")
    if spec["input"]["kind"] != "features":
        problems.add("loss.gradient_penalty", "needs a features input: the penalty is the norm of the loss's "
                                              "gradient with respect to the input, and tokens have none")
    if spec["loss"]["type"] == "cross_entropy":
        problems.add("loss.type", f"cross_entropy cannot carry a gradient penalty: {OPS['cross_entropy'].not_recordable}; "
                                  'use "mse" or "sum", or remove loss.gradient_penalty')
    for path, layer in _walk_layers(spec["layers"], "layers"):
        kind = LAYER_KINDS.get(layer.get("type"))           # an unknown type has its own problem already
        op = kind.unrecordable_op if kind is not None else None
        if op is not None:
            problems.add(f"{path}.type", f"{layer['type']} cannot be differentiated twice ({OPS[op].not_recordable}): "
                                         "remove the layer or loss.gradient_penalty")


def _walk_layers(layers, path):
    for i, layer in enumerate(layers):
        yield f"{path}[{i}]", layer
        if "layers" in layer:
            yield from _walk_layers(layer["layers"], f"{path}[{i}].layers")


def _check_optimizer(value, problems):
    out = OPTIMIZER.read(value, problems)
    if out["type"] == "sgd" and out["nesterov"] and out["momentum"] == 0:
        problems.add("optimizer.nesterov", "needs momentum: set optimizer.momentum above 0 (0.9 is usual) "
                                           "or nesterov to false")
    return out


def _check_loss_fits(spec, shape, problems):
    loss = spec["loss"]
    if loss["type"] == "mse" and loss["target"] == "square" and tuple(shape) != input_shape(spec):
        problems.add("loss.target", f'"square" compares the output with x², so the output must have the '
                                    f"input's shape {list(input_shape(spec))}, not {list(shape)}")
    if loss["type"] == "cross_entropy" and shape[-1] < 2:
        problems.add("loss.type", "cross_entropy needs at least 2 output classes in the last layer")


def _enforce_caps(tally, micro_batches=1):
    if tally.max_elements > cap("elements_per_tensor"):
        raise CapError("elements per tensor", cap("elements_per_tensor"), tally.max_elements)
    entries = tally.entries * micro_batches        # each micro-batch records its own tape
    if entries > cap("tape_entries"):
        raise CapError("tape entries", cap("tape_entries"), entries)
    # parameters + their grads (+ Adam's two moments, counted always as the upper bound; SGD momentum
    # is one) + activations
    total = tally.param_elements * tally.itemsize * 4 + tally.activation_bytes
    if total > cap("total_bytes"):
        raise CapError("total bytes (256 MiB)", cap("total_bytes"), total)
