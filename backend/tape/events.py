"""The engine's event bus: listeners attached for a run hear every alloc, save, free, vjp and accumulation.

Every kind of event is declared here, once, with the payload it carries (`KINDS`); the engine emits them by these
names (`events.emit(events.ALLOC, tensor=..., storage=..., node=...)`), and a listener's `on_<kind>` methods are
found by `handlers`, so a kind nobody declared, a payload with other fields, or a handler for no kind fails at
once instead of being silently skipped. The recorder (backend/trace/recorder.py) hears every kind; the sweep meter
(backend/sweeps/meter.py) the ones it counts.

With no listener attached, `active` is False and the engine skips building events entirely, so an
un-traced run pays one boolean check per event site.
"""
from contextlib import contextmanager
from dataclasses import dataclass

_listeners = []
active = False


@dataclass(frozen=True)
class EventKind:
    name: str
    fields: tuple        # the payload's keyword names, in the order the engine passes them
    words: str           # when the engine emits it


KINDS = {}
_FIELDS = {}         # kind -> its payload's field names, as a set: what emit checks each payload against


def _declare(name, fields, words):
    KINDS[name] = EventKind(name, fields, words)
    _FIELDS[name] = frozenset(fields)
    return name


# ----- tensors and storages ---------------------------------------------------------------------------
ALLOC = _declare("alloc", ("tensor", "storage", "node"), "a Tensor over a new storage (node: the grad_fn that made it)")
VIEW = _declare("view", ("tensor", "storage", "node"), "a view: a new Tensor over its base's storage")
DROP = _declare("drop", ("tensor",), "the program let go of a Tensor (its storage may live on)")
FREE = _declare("free", ("storage",), "a storage went back to the allocator")
GRAD = _declare("grad", ("tensor", "storage"), "a leaf's .grad was set (storage: the gradient's)")
INPLACE = _declare("inplace", ("tensor", "version"), "an in-place op wrote into tensor, its storage now at version")
ALLOC_GRAD = _declare("alloc_grad", ("storage", "array", "owner"), "backward made the gradient of tensor uid owner")
ALLOC_EXTRA = _declare("alloc_extra", ("uid", "storage", "array", "node", "name"),
                       "an op saved a value of its own for backward (a mask, statistics): held by the tape only")
ALLOC_RECOMPUTE = _declare("alloc_recompute", ("storage", "array", "entry"),
                           "a saved value kept as a recipe was recomputed in backward (entry: its tape index)")

# ----- the forward tape -------------------------------------------------------------------------------
OP = _declare("op", ("op", "attrs"), "an op ran and recorded no entry (no_grad, or no input needs grad)")
RECORD = _declare("record", ("node", "inputs", "out_shape"), "an op appended its entry (node) to the tape")
TANGENT = _declare("tangent", ("op", "attrs", "inputs", "output"), "a forward-mode op set its output's tangent")
SAVE = _declare("save", ("node", "name", "uid", "storage"), "an entry saved tensor uid for its backward")
SAVE_RECIPE = _declare("save_recipe", ("node", "name", "uid"), "an entry keeps tensor uid as a recipe (recomputed)")
CHECKPOINT_BEGIN = _declare("checkpoint_begin", ("node",), "a checkpoint's region starts its unrecorded forward")
CHECKPOINT_END = _declare("checkpoint_end", ("node",), "a checkpoint's region ended its forward")

# ----- the backward sweep -----------------------------------------------------------------------------
BACKWARD_BEGIN = _declare("backward_begin", ("root", "dependencies"),
                          "backward counted each node's consumers (dependencies: node -> count) from root")
NODE_BEGIN = _declare("node_begin", ("node", "adjoint"), "a node's vjp starts, with the adjoint it received")
CONTRIBUTION = _declare("contribution", ("node", "parent", "adjoint"), "a node handed parent (node or leaf) a gradient")
ACCUMULATE = _declare("accumulate", ("target", "parts", "total"), "two gradients of tensor uid target summed")
ACCUMULATE_LEAF = _declare("accumulate_leaf", ("leaf", "parts", "first"), "a contribution went into a leaf's .grad")
RELEASE = _declare("release", ("node", "uids"), "a node's vjp let go of what it saved")
NODE_END = _declare("node_end", ("node", "ready", "pending"), "a node's vjp ended (ready: the nodes it made ready)")
RECOMPUTE_BEGIN = _declare("recompute_begin", ("node",), "a checkpoint's backward starts re-running its region")
RECOMPUTE_END = _declare("recompute_end", ("node",), "the region's recompute ended")

# ----- after backward ---------------------------------------------------------------------------------
OPTIMIZER_STEP = _declare("optimizer_step", ("param", "index"), "the optimizer updates parameter param")
UNSCALE = _declare("unscale", ("param", "underflow"), "the loss scaler unscaled param's gradient")


class UnknownEvent(ValueError):
    """For developers: an event kind, payload or handler that KINDS does not declare."""


def emit(kind, **payload):
    """Deliver one event to every attached listener (callers check `events.active` first)."""
    if payload.keys() != _FIELDS.get(kind):
        raise UnknownEvent(_mismatch(kind, payload))
    for listener in _listeners:
        listener(kind, payload)


def _mismatch(kind, payload):
    if kind not in KINDS:
        return f"event kind {kind!r} is not declared in backend/tape/events.py (declared: {', '.join(KINDS)})"
    return (f"event {kind!r} carries {sorted(payload)}; backend/tape/events.py declares its payload as "
            f"{list(KINDS[kind].fields)}")


def handlers(listener, every=False):
    """{kind: listener.on_<kind>} for the kinds `listener` handles (all of them with every=True, else it raises);
    an `on_...` method that names no declared kind raises, so a typo is never a handler that is never called."""
    found = {}
    for attr in dir(type(listener)):
        if attr.startswith("on_"):
            if attr[3:] not in KINDS:
                raise UnknownEvent(f"{type(listener).__name__}.{attr} handles no declared event kind "
                                   f"(backend/tape/events.py declares: {', '.join(KINDS)})")
            found[attr[3:]] = getattr(listener, attr)
    missing = [kind for kind in KINDS if kind not in found]
    if every and missing:
        raise UnknownEvent(f"{type(listener).__name__} hears every event but has no handler for {missing}")
    return found


@contextmanager
def listening(listener):
    """Attach `listener(kind, payload)` for the duration of a with-block."""
    global active
    _listeners.append(listener)
    active = True
    try:
        yield listener
    finally:
        _listeners.remove(listener)
        active = bool(_listeners)
