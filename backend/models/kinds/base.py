"""The layer-kind registry and its dispatch: check, plan and build one layer (or a list) through its Kind.

Each kind module (dense, pointwise, norms, attention, wrappers) registers its Kinds here; spec.py and
network.py call these functions, and wrappers recurse through them. Kind modules import this one, never the
reverse, and this one imports no kind module: backend/models/kinds/__init__.py does, to fill LAYER_KINDS.
"""
from contextlib import nullcontext

from backend.models import fields as f
from backend.models.caps import cap
from backend.tape import layer_scope

LAYER_KINDS = {}

NAME = f.Field("name", "text", "a label for the layer, shown in the graph and the tables", default="",
               cap="name_length", optional=True)
FROZEN = f.Field("frozen", "boolean", "requires_grad False on this layer's parameters: no grad, no optimizer "
                 "state, and nothing saved only for their gradient", default=False, optional=True)


class Kind:
    """One layer type, declared once: its fields with help, its shape plan and its build.

    plan(layer, shape, path, problems, tally) -> output shape, or None with a problem added; it tallies the
        tape entries, bytes and FLOPs from shapes alone.
    build(layer, width, ctx, path) -> (forward function, output width), creating parameters through ctx.
    check(layer, path, problems, out, depth) -> extra allowed keys, for what plain fields cannot say (a
        wrapper's inner layers).
    `params`: the kind owns parameters (so it may be frozen). `reads_tokens`: it takes token ids (the first
    layer on a tokens input). `inner`: a wrapper's default inner layers, for the editor. `unrecordable_op`: the
    op inside the kind whose vjp cannot be recorded (the registry's not_recordable says why), so a spec with it
    cannot be differentiated twice.
    """

    def __init__(self, name, help, plan, build, fields=(), params=False, check=None, reads_tokens=False,
                 inner=None, unrecordable_op=None):
        self.name, self.help, self.plan, self.build = name, help, plan, build
        self.fields = (NAME, *fields, *((FROZEN,) if params else ()))
        self.params, self.check, self.reads_tokens, self.inner = params, check, reads_tokens, inner
        self.unrecordable_op = unrecordable_op

    def describe(self):
        entry = {"type": self.name, "help": self.help, "params": self.params,
                 "fields": [field.describe() for field in self.fields], "wrapper": self.inner is not None}
        if self.inner is not None:
            entry["layers"] = list(self.inner)
        return entry


def register(kind):
    assert kind.name not in LAYER_KINDS, kind.name
    LAYER_KINDS[kind.name] = kind
    return kind


def schema():
    """Every kind's entry for GET /api/schema, as a list in registration order (the editor's order)."""
    return [kind.describe() for kind in LAYER_KINDS.values()]


# ============================== checks ==============================

def check_layer(layer, path, problems, depth=0):
    """Validate one layer (recursing into wrappers); returns the normalized layer."""
    layer = f.mapping(layer, path, problems)
    name = layer.get("type")
    if not isinstance(name, str) or name not in LAYER_KINDS:
        f.choice(name, f"{path}.type", problems, tuple(LAYER_KINDS))
        return {"type": "relu"}
    kind = LAYER_KINDS[name]
    normalized = {"type": name}
    allowed = {"type", *f.read_fields(kind.fields, layer, path, problems, normalized)}
    if kind.check is not None:
        allowed.update(kind.check(layer, path, problems, normalized, depth))
    f.unknown_keys(layer, allowed, path, problems)
    return normalized


def check_layers(layers, path, problems, depth):
    if not isinstance(layers, list) or not layers:
        problems.add(path, "must be a non-empty list of layers")
        return []
    if len(layers) > cap("layers_per_list"):
        problems.add(path, f"has {len(layers)} layers; at most {cap('layers_per_list')} per list (use repeat)")
        return []
    if depth > cap("depth"):
        problems.add(path, f"nests wrappers {depth} deep; at most {cap('depth')}")
        return []
    return [check_layer(layer, f"{path}[{i}]", problems, depth) for i, layer in enumerate(layers)]


# ============================== shapes and sizes ==============================

def plan_layer(layer, shape, path, problems, tally, tokens):
    """The output shape of `layer` on `shape`, tallying its cost; None when the shapes do not fit.

    Also follows whether the running value requires grad (`tally.grad_flows`), as the engine will: a
    parameter that is not frozen, outside no_grad, makes it so; detach and no_grad cut it.
    """
    kind = LAYER_KINDS[layer["type"]]
    if tokens and not kind.reads_tokens:
        problems.add(path, "token inputs need an embedding as the first layer")
        return None
    if kind.reads_tokens and not tokens:
        problems.add(path, f"an {kind.name} must be the first layer, on a tokens input")
        return None
    out = kind.plan(layer, shape, path, problems, tally)
    if kind.inner is None:
        tally.on_input = False          # a wrapper's own layers say whether it ran an op on the input
    if kind.params and not layer.get("frozen") and tally.grad_enabled:
        tally.grad_flows = True
    return out


def plan_layers(layers, shape, path, problems, tally, tokens=0):
    for i, layer in enumerate(layers):
        shape = plan_layer(layer, shape, f"{path}[{i}]", problems, tally, tokens if i == 0 else 0)
        if shape is None:
            return None
    return shape


# ============================== builds ==============================

def build_layer(layer, width, ctx, path):
    """(forward function, output width) of one layer; a frozen layer's parameters are made without grad."""
    with ctx.freezing() if layer.get("frozen") else nullcontext():
        return LAYER_KINDS[layer["type"]].build(layer, width, ctx, path)


def build_layers(layers, width, ctx, path):
    fns = []
    for i, layer in enumerate(layers):
        fn, width = build_layer(layer, width, ctx, f"{path}[{i}]")
        fns.append(fn)
    return fns, width


def chain(fns):
    """One forward function running `fns` in order."""
    def run(h):
        for fn in fns:
            h = fn(h)
        return h
    return run


def scoped(path, fn):
    """`fn` with every op it records labelled `path` (the trace groups tape entries by layer)."""
    def run(h):
        with layer_scope(path):
            return fn(h)
    return run
