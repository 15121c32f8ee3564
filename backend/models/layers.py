"""Layer kinds: for each spec layer type, its fields, its shape and size arithmetic, and how it is built.

`check` validates and normalizes one layer; `plan` infers the output shape and tallies tape entries and
bytes without allocating anything (the caps are enforced on this tally); `build` creates the parameters
and returns the layer's forward function.
"""
import math


import backend.tape as T
from backend.models import fields as f

MAX_WIDTH = 4096
MAX_HEADS = 16
MAX_REPEAT = 64
MAX_LAYERS_PER_LIST = 64
MAX_DEPTH = 4
NAME_LENGTH = 80

RECORDED_ENTRY_FACTOR = 4.5     # tape entries with a recorded backward and its penalty, per forward entry
RECORDED_BYTES_FACTOR = 3.5     # activation bytes held, against the forward's alone
RECORDED_FLOPS_FACTOR = 3.0     # matmul FLOPs of forward + backward + backward-2, against forward + backward

ACTIVATIONS = {"relu": T.relu, "gelu": T.gelu, "tanh": T.tanh, "sigmoid": T.sigmoid}


class Tally:
    """What a spec would cost, counted from shapes alone: tape entries, bytes, the largest tensor, and the
    matmul FLOPs and elements its forward computes (what the work cap in backend/driver/work.py prices)."""

    def __init__(self, itemsize):
        self.itemsize = itemsize
        self.entries = 0
        self.activation_bytes = 0
        self.activation_elements = 0
        self.param_elements = 0
        self.max_elements = 0
        self.matmul_flops = 0

    def op(self, elements, entries=1, itemsize=None):
        self.entries += entries
        self.activation_bytes += elements * (itemsize or self.itemsize)
        self.activation_elements += elements
        self.max_elements = max(self.max_elements, elements)

    def matmul(self, m, k, n, times=1):
        """An [m, k] @ [k, n] product (`times` of them): 2·m·k·n FLOPs each."""
        self.matmul_flops += 2 * m * k * n * times

    def add_recorded_backward(self):
        """A gradient penalty's cost on top of the forward's: its backward is recorded (create_graph) and a second
        backward sweeps both tapes. Measured on the gradient-penalty preset and a 16-layer tanh MLP: 4.3-4.4x the
        tape entries, 1.8-3.2x the peak and 2.1-2.8x the time of the same model without the penalty; the
        factors below bound those, so the size and work caps still bound a penalized spec."""
        self.entries = int(self.entries * RECORDED_ENTRY_FACTOR)
        self.activation_bytes = int(self.activation_bytes * RECORDED_BYTES_FACTOR)
        self.activation_elements = int(self.activation_elements * RECORDED_BYTES_FACTOR)
        self.matmul_flops = int(self.matmul_flops * RECORDED_FLOPS_FACTOR)

    def params(self, elements):
        self.param_elements += elements
        self.max_elements = max(self.max_elements, elements)


def _rows(shape):
    return math.prod(shape[:-1])


# ============================== checks ==============================

def check_layer(layer, path, problems, depth=0):
    """Validate one layer (recursing into wrappers); returns the normalized layer."""
    layer = f.mapping(layer, path, problems)
    kind = layer.get("type")
    if not isinstance(kind, str) or kind not in CHECKS:
        problems.add(f"{path}.type", "must be one of " + ", ".join(f'"{k}"' for k in CHECKS))
        return {"type": "relu"}
    normalized = {"type": kind}
    if "name" in layer:
        normalized["name"] = f.text(layer, "name", path, problems, NAME_LENGTH)
    allowed = {"type", "name", *CHECKS[kind](layer, path, problems, normalized, depth)}
    f.unknown_keys(layer, allowed, path, problems)
    return normalized


def check_layer_list(layers, path, problems, depth):
    if not isinstance(layers, list) or not layers:
        problems.add(path, "must be a non-empty list of layers")
        return []
    if len(layers) > MAX_LAYERS_PER_LIST:
        problems.add(path, f"has {len(layers)} layers; at most {MAX_LAYERS_PER_LIST} per list (use repeat)")
        return []
    if depth > MAX_DEPTH:
        problems.add(path, f"nests wrappers {depth} deep; at most {MAX_DEPTH}")
        return []
    return [check_layer(layer, f"{path}[{i}]", problems, depth) for i, layer in enumerate(layers)]


def _check_linear(layer, path, problems, out, depth):
    out["out"] = f.integer(layer, "out", path, problems, 1, MAX_WIDTH)
    out["bias"] = f.boolean(layer, "bias", path, problems, True)
    return ("out", "bias")


def _check_plain(layer, path, problems, out, depth):
    return ()


def _check_dropout(layer, path, problems, out, depth):
    out["p"] = f.number(layer, "p", path, problems, 0.0, 1.0, default=0.1, high_open=True)
    return ("p",)


def _check_embedding(layer, path, problems, out, depth):
    out["dim"] = f.integer(layer, "dim", path, problems, 1, 1024)
    return ("dim",)


def _check_attention(layer, path, problems, out, depth):
    out["heads"] = f.integer(layer, "heads", path, problems, 1, MAX_HEADS, default=1)
    out["causal"] = f.boolean(layer, "causal", path, problems, True)
    out["impl"] = f.choice(layer, "impl", path, problems, ("naive", "efficient"), default="naive")
    out["dropout"] = f.number(layer, "dropout", path, problems, 0.0, 1.0, default=0.0, high_open=True)
    return ("heads", "causal", "impl", "dropout")


def _check_block(layer, path, problems, out, depth):
    _check_attention(layer, path, problems, out, depth)
    out["mlp_ratio"] = f.integer(layer, "mlp_ratio", path, problems, 1, 8, default=4)
    return ("heads", "causal", "impl", "dropout", "mlp_ratio")


def _check_residual(layer, path, problems, out, depth):
    out["layers"] = check_layer_list(layer.get("layers"), f"{path}.layers", problems, depth + 1)
    return ("layers",)


def _check_repeat(layer, path, problems, out, depth):
    out["times"] = f.integer(layer, "times", path, problems, 1, MAX_REPEAT, default=1)
    out["layers"] = check_layer_list(layer.get("layers"), f"{path}.layers", problems, depth + 1)
    return ("times", "layers")


CHECKS = {
    "linear": _check_linear, "relu": _check_plain, "gelu": _check_plain, "tanh": _check_plain,
    "sigmoid": _check_plain, "layernorm": _check_plain, "rmsnorm": _check_plain, "dropout": _check_dropout,
    "embedding": _check_embedding, "attention": _check_attention, "residual": _check_residual,
    "transformer_block": _check_block, "repeat": _check_repeat,
}

# ============================== shapes and sizes ==============================

def plan_layer(layer, shape, path, problems, tally, tokens):
    """The output shape of `layer` on `shape`, tallying its cost; None when the shapes do not fit."""
    kind = layer["type"]
    if tokens and kind != "embedding":
        problems.add(path, "token inputs need an embedding as the first layer")
        return None
    if kind == "embedding":
        if not tokens:
            problems.add(path, "an embedding must be the first layer, on a tokens input")
            return None
        tally.params(tokens * layer["dim"])
        out = (*shape, layer["dim"])
        tally.op(math.prod(out))
        return out
    rows, width = _rows(shape), shape[-1]
    if kind == "linear":
        tally.params(width * layer["out"] + (layer["out"] if layer["bias"] else 0))
        tally.op(rows * layer["out"], entries=2 if layer["bias"] else 1)
        tally.matmul(rows, width, layer["out"])
        return (*shape[:-1], layer["out"])
    if kind in ACTIVATIONS or kind in ("layernorm", "rmsnorm"):
        if kind in ("layernorm", "rmsnorm"):
            tally.params(2 * width)
        tally.op(rows * width)
        return shape
    if kind == "dropout":
        tally.op(rows * width, itemsize=tally.itemsize + 1)
        return shape
    if kind in ("attention", "transformer_block"):
        return _plan_attention(layer, shape, path, problems, tally)
    if kind == "residual":
        out = plan_layers(layer["layers"], shape, f"{path}.layers", problems, tally)
        if out is not None and out != shape:
            problems.add(f"{path}.layers", f"must keep the shape {list(shape)} so the skip can be added; "
                                           f"they end at {list(out)}")
            return None
        tally.op(rows * width)
        return shape
    if kind == "repeat":
        for _ in range(layer["times"]):
            shape = plan_layers(layer["layers"], shape, f"{path}.layers", problems, tally)
            if shape is None:
                return None
        return shape
    raise AssertionError(kind)


def _plan_attention(layer, shape, path, problems, tally):
    if len(shape) != 3:
        problems.add(path, "attention needs a [batch, seq, dim] input: put it after an embedding")
        return None
    batch, seq, dim = shape
    if dim % layer["heads"]:
        problems.add(f"{path}.heads", f"must divide the width {dim}")
        return None
    tokens = batch * seq
    tally.params(4 * dim * dim + 4 * dim)
    tally.op(tokens * dim, entries=8 * 2 + 4)                  # q, k, v, proj (+bias) and head reshapes
    tally.matmul(tokens, dim, dim, times=4)
    tally.matmul(seq, dim // layer["heads"], seq, times=2 * batch * layer["heads"])    # scores, then mixing v
    if layer["impl"] == "naive":
        tally.op(batch * layer["heads"] * seq * seq * 5, entries=6)
    else:
        tally.op(tokens * dim + batch * layer["heads"] * seq, entries=1)
    if layer["type"] == "transformer_block":
        hidden = dim * layer["mlp_ratio"]
        tally.params(2 * dim * hidden + hidden + dim + 4 * dim)
        tally.op(tokens * (8 * dim + 3 * hidden), entries=14)
        tally.matmul(tokens, dim, hidden, times=2)
    return shape


def plan_layers(layers, shape, path, problems, tally, tokens=0):
    for i, layer in enumerate(layers):
        shape = plan_layer(layer, shape, f"{path}[{i}]", problems, tally, tokens if i == 0 else 0)
        if shape is None:
            return None
    return shape
