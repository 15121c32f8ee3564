"""Selective recomputation (PyTorch's selective activation checkpointing): chosen ops' outputs are not pinned.

Inside `recomputing(entries)`, the output of each recorded op whose tape index is in `entries` carries a Recipe:
the op, its attributes, and its inputs (arrays with their storages and versions, or the inputs' own recipes).
A consumer that would save such an output saves the recipe instead; its backward re-runs the recipe when it
unpacks, and the recomputed values live only for that vjp. A random op replays from its saved mask.
Under create_graph the recomputed value is handed to the vjp as a Tensor whose history is the entry that first
computed it (a saved value's producer, as for any saved tensor), so the second backward goes through it: what the
recorded vjp saves of it keeps the recomputed copy alive until backward-2 reaches that op.
"""
import weakref
from contextlib import contextmanager

from backend.tape import events
from backend.tape.registry import run_forward
from backend.tape.storage import Storage, next_uid

_entries = None          # tape indices whose outputs are recomputed, while a policy is active
_counter = 0             # recorded ops since the policy began: the tape index of the next one
enabled = False          # read on every recorded op: one attribute, no call


@contextmanager
def recomputing(entries):
    """Recompute, instead of saving, the outputs of the forward entries with these tape indices."""
    global _entries, _counter, enabled
    previous = (_entries, _counter, enabled)
    _entries, _counter, enabled = frozenset(entries), 0, True
    try:
        yield
    finally:
        _entries, _counter, enabled = previous


def on_record(node, inputs, output):
    """Count a recorded op; give its output a recipe when the policy recomputes it."""
    global _counter
    index, _counter = _counter, _counter + 1
    if index in _entries:
        # A random op replays from the mask its own node saved (read when the recipe runs, before that
        # node's backward has released it: consumers come later in forward, so earlier in backward).
        replay = node if node.op.family == "random" else None
        output.recipe = Recipe(node.op, node.attrs, [_source(t) for t in inputs], replay, index, weakref.ref(node))


def _source(tensor):
    return tensor.recipe if tensor.recipe is not None else (tensor.data, tensor.storage, tensor.storage.version)


class Recipe:
    """How to get a forward value back: re-run `op` on its sources (arrays or further recipes)."""

    __slots__ = ("op", "attrs", "sources", "replay", "entry", "producer")

    def __init__(self, op, attrs, sources, replay, entry, producer):
        self.op, self.attrs, self.sources, self.replay, self.entry = op, attrs, sources, replay, entry
        self.producer = producer    # a weak reference to the entry that computed it (a node may save its own output)

    def evaluate(self, cache, check):
        """The recomputed array (each recipe once per unpack, via `cache`); `check` verifies versions."""
        key = id(self)
        if key in cache:
            return cache[key][0]
        arrays = [source.evaluate(cache, check) if isinstance(source, Recipe) else check(*source)
                  for source in self.sources]
        if self.op.family == "random":
            mask = check(*self.replay.saved["mask"][:3])
            out = (arrays[0] * mask * (1.0 / (1.0 - self.attrs["p"]))).astype(arrays[0].dtype, copy=False)
        else:
            out, _extras = run_forward(self.op, self.attrs, arrays)
        storage = Storage(out.nbytes, out.dtype, "activation", next_uid())
        if events.active:
            events.emit(events.ALLOC_RECOMPUTE, storage=storage, array=out, entry=self.entry)
        cache[key] = (out, storage)          # the storage lives as long as this unpack's values
        return out

    def storage_in(self, cache):
        """The storage this recipe's evaluation allocated in `cache` (one unpack's)."""
        return cache[id(self)][1]
