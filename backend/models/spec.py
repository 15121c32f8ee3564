"""Model specs: validation with every problem's path, normalization with defaults, and the size caps.

A spec over a cap is refused here, from shape arithmetic alone, before anything is allocated.
"""
import numpy as np

from backend.models import fields as f
from backend.models.errors import CapError, SpecError
from backend.models.layers import Tally, check_layer_list, plan_layers
from backend.problems import Problems
from backend.tape import OPS

DTYPES = ("float32", "float64", "float16")
MAX_BATCH = 4096
MAX_FEATURES = 4096
MAX_VOCAB = 8192
MAX_SEQ = 512
MAX_ELEMENTS_PER_TENSOR = 1 << 23            # 8 Mi elements
MAX_TOTAL_BYTES = 256 * 1024 * 1024          # 256 MiB
MAX_TAPE_ENTRIES = 20_000
TOP_LEVEL = {"name", "seed", "dtype", "batch", "input", "layers", "loss", "optimizer", "init_std", "description"}


def validate_spec(spec):
    """Return the normalized spec, or raise SpecError with every problem (CapError when over a cap)."""
    problems = Problems()
    spec = f.mapping(spec, "spec", problems)
    if problems:
        raise SpecError(problems)
    f.unknown_keys(spec, TOP_LEVEL, "", problems)
    normalized = {
        "name": f.text(spec, "name", "", problems, 80, default="model"),
        "seed": f.integer(spec, "seed", "", problems, 0, 2**31 - 1, default=0),
        "dtype": f.choice(spec, "dtype", "", problems, DTYPES, default="float32"),
        "batch": f.integer(spec, "batch", "", problems, 1, MAX_BATCH, default=1),
        "input": _check_input(spec.get("input"), problems),
        "layers": check_layer_list(spec.get("layers"), "layers", problems, depth=0),
        "loss": _check_loss(spec.get("loss", {"type": "sum"}), problems),
        "optimizer": _check_optimizer(spec.get("optimizer", {"type": "none"}), problems),
    }
    if spec.get("init_std") is not None:
        normalized["init_std"] = f.number(spec, "init_std", "", problems, 1e-6, 10.0)
    if "description" in spec:
        normalized["description"] = f.text(spec, "description", "", problems, 400)
    _check_penalty_fits(normalized, problems)
    if problems:
        raise SpecError(problems)
    tally = plan(normalized, problems)
    if problems:
        raise SpecError(problems)
    _enforce_caps(tally)
    return normalized


def input_shape(spec):
    source = spec["input"]
    if source["kind"] == "tokens":
        return (spec["batch"], source["seq"])
    return (spec["batch"], source["size"])


def plan(spec, problems=None):
    """Shape-infer the whole model: the Tally of entries and bytes, and `tally.output_shape`."""
    problems = Problems() if problems is None else problems
    tally = Tally(np.dtype(spec["dtype"]).itemsize)
    vocab = spec["input"]["vocab"] if spec["input"]["kind"] == "tokens" else 0
    tally.op(int(np.prod(input_shape(spec))), entries=0)            # the input batch is a tensor too
    shape = plan_layers(spec["layers"], input_shape(spec), "layers", problems, tally, tokens=vocab)
    tally.output_shape = shape
    if shape is not None:
        _check_loss_fits(spec, shape, problems)
        tally.op(int(np.prod(shape)), entries=3)
        if "gradient_penalty" in spec["loss"]:
            tally.add_recorded_backward()
        if tally.param_elements == 0:
            problems.add("layers", "have no parameters, so backward has nothing to differentiate: "
                                   "add a linear, embedding or norm layer")
    if problems and shape is None and not any(p["path"].startswith("layers") for p in problems):
        problems.add("layers", "the layers do not fit the input")
    return tally


def _check_input(value, problems):
    value = f.mapping(value, "input", problems)
    kind = f.choice(value, "kind", "input", problems, ("features", "tokens"), default="features")
    if kind == "features":
        f.unknown_keys(value, {"kind", "size"}, "input", problems)
        return {"kind": kind, "size": f.integer(value, "size", "input", problems, 1, MAX_FEATURES, default=1)}
    f.unknown_keys(value, {"kind", "vocab", "seq"}, "input", problems)
    return {"kind": kind, "vocab": f.integer(value, "vocab", "input", problems, 2, MAX_VOCAB, default=50),
            "seq": f.integer(value, "seq", "input", problems, 1, MAX_SEQ, default=16)}


def _check_loss(value, problems):
    value = f.mapping(value, "loss", problems)
    kind = f.choice(value, "type", "loss", problems, ("mse", "cross_entropy", "sum"), default="sum")
    loss = {"type": kind}
    if kind == "mse":
        f.unknown_keys(value, {"type", "target", "gradient_penalty"}, "loss", problems)
        loss["target"] = f.choice(value, "target", "loss", problems, ("square", "zeros", "random"), default="zeros")
    else:
        f.unknown_keys(value, {"type", "gradient_penalty"}, "loss", problems)
    if value.get("gradient_penalty") is not None:
        loss["gradient_penalty"] = _check_gradient_penalty(value["gradient_penalty"], problems)
    return loss


MAX_PENALTY_WEIGHT = 1000.0
# Layer types whose ops' vjps cannot be recorded (the registry's not_recordable says why), by the op that refuses.
NOT_TWICE_DIFFERENTIABLE = {"layernorm": "layernorm", "rmsnorm": "rmsnorm", "transformer_block": "layernorm",
                            "attention": "attention"}


def _check_gradient_penalty(value, problems):
    """λ·mean over rows of (‖∂loss/∂x_row‖ − 1)², WGAN-GP's penalty: its backward is recorded, then differentiated."""
    path = "loss.gradient_penalty"
    value = f.mapping(value, path, problems)
    f.unknown_keys(value, {"weight"}, path, problems)
    return {"weight": f.number(value, "weight", path, problems, 0, MAX_PENALTY_WEIGHT, default=10.0,
                               hint="WGAN-GP uses 10")}


def _check_penalty_fits(spec, problems):
    """A gradient penalty needs a differentiable input and a model whose every vjp can be recorded."""
    if "gradient_penalty" not in spec["loss"]:
        return
    if spec["input"]["kind"] != "features":
        problems.add("loss.gradient_penalty", "needs a features input: the penalty is the norm of the loss's "
                                              "gradient with respect to the input, and tokens have none")
    if spec["loss"]["type"] == "cross_entropy":
        problems.add("loss.type", f"cross_entropy cannot carry a gradient penalty: {OPS['cross_entropy'].not_recordable}; "
                                  'use "mse" or "sum", or remove loss.gradient_penalty')
    for path, layer in _walk_layers(spec["layers"], "layers"):
        op = NOT_TWICE_DIFFERENTIABLE.get(layer["type"])
        if op is not None:
            problems.add(f"{path}.type", f"{layer['type']} cannot be differentiated twice ({OPS[op].not_recordable}): "
                                         "remove the layer or loss.gradient_penalty")


def _walk_layers(layers, path):
    for i, layer in enumerate(layers):
        yield f"{path}[{i}]", layer
        if "layers" in layer:
            yield from _walk_layers(layer["layers"], f"{path}[{i}].layers")


OPTIMIZERS = ("none", "sgd", "adam", "adamw")
OPTIMIZER_FIELDS = {
    "none": {"type", "lr"},
    "sgd": {"type", "lr", "momentum", "weight_decay", "nesterov"},
    "adam": {"type", "lr", "betas", "weight_decay"},
    "adamw": {"type", "lr", "betas", "weight_decay"},
}


def _check_optimizer(value, problems):
    """torch.optim's hyperparameters with torch's defaults (lr 1e-3; AdamW's weight_decay 0.01, others' 0)."""
    value = f.mapping(value, "optimizer", problems)
    kind = f.choice(value, "type", "optimizer", problems, OPTIMIZERS, default="none")
    allowed = OPTIMIZER_FIELDS[kind]
    for key in [k for k in value if k not in allowed]:
        owners = [t for t in OPTIMIZERS[1:] if key in OPTIMIZER_FIELDS[t]]
        if owners:
            named = ", ".join(owners[:-1]) + " and " + owners[-1] if len(owners) > 1 else owners[0]
            problems.add(f"optimizer.{key}", f'is a field of {named}, not {kind}: remove it, or set optimizer.type '
                                             f'to "{owners[0]}"')
    f.unknown_keys({k: v for k, v in value.items() if not any(k in OPTIMIZER_FIELDS[t] for t in OPTIMIZERS)},
                   allowed, "optimizer", problems)
    if kind == "none":
        return {"type": kind}
    out = {"type": kind,
           "lr": f.number(value, "lr", "optimizer", problems, 0, 10, default=1e-3, hint="such as 0.001 or 0.1")}
    if kind == "sgd":
        out["momentum"] = f.number(value, "momentum", "optimizer", problems, 0, 1, default=0.0, high_open=True,
                                   hint="0.9 is usual; 0 turns momentum off")
    else:
        out["betas"] = f.number_pair(value, "betas", "optimizer", problems, 0, 1, default=(0.9, 0.999),
                                     high_open=True, hint="the moments' decay rates; 0.9 and 0.999 are usual")
    out["weight_decay"] = f.number(value, "weight_decay", "optimizer", problems, 0, 1,
                                   default=0.01 if kind == "adamw" else 0.0, hint="0 turns it off; 0.01 is usual")
    if kind == "sgd":
        out["nesterov"] = f.boolean(value, "nesterov", "optimizer", problems, default=False)
        if out["nesterov"] and out["momentum"] == 0:
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


def _enforce_caps(tally):
    if tally.max_elements > MAX_ELEMENTS_PER_TENSOR:
        raise CapError("elements per tensor", MAX_ELEMENTS_PER_TENSOR, tally.max_elements)
    if tally.entries > MAX_TAPE_ENTRIES:
        raise CapError("tape entries", MAX_TAPE_ENTRIES, tally.entries)
    # parameters + their grads (+ Adam's two moments, counted always as the upper bound; SGD momentum
    # is one) + activations
    total = tally.param_elements * tally.itemsize * 4 + tally.activation_bytes
    if total > MAX_TOTAL_BYTES:
        raise CapError("total bytes (256 MiB)", MAX_TOTAL_BYTES, total)
