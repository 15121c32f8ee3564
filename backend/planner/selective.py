"""Selective recomputation, predicted: which forward outputs can be recomputed, and the memory if they are.

With a recompute set, no step moves: the base run's storages keep their births, but
- a recomputed output is no longer pinned by its savers: it lives until its last Tensor is dropped;
- each saver instead holds a recipe, which holds the recipe's sources (stored arrays, or further recipes)
  until that saver's backward step; a recipe is also held by its output Tensor while that lives;
- at each saver's backward step the recipes it holds are evaluated once each: transient copies, born and
  freed at that step.
Live bytes at a step are then the storages with born ≤ step ≤ freed, counted by the trace document's own memory
core (backend/trace/memory.py): the base run's lifetimes once, as a difference array, and each recompute set as the
difference points it moves.
"""
from backend.trace.memory import add_changes, lifetime_changes, live_from_deltas, release_point, step_deltas
from backend.trace.recompute import refusal, saved_by_storage


class SelectiveBase:
    """What the prediction reads from the base (un-checkpointed) document."""

    def __init__(self, document):
        self.document = document
        self.tape = [e for e in document["tape"] if e["phase"] == "forward"]
        self.tensors = {t["id"]: t for t in document["tensors"]}
        self.storages = {s["id"]: s for s in document["storages"]}
        self.backward_step = {item["entry"]: item["step"] for item in document["sweep"]}
        self.savers = {}                                   # tensor id -> entries saving it
        for entry in self.tape:
            for uid in entry["saved"]:
                self.savers.setdefault(uid, []).append(entry["index"])
        self.n_steps = len(document["steps"])
        self.saved_on_storage = saved_by_storage(document["tensors"])
        self.tensors_on_storage = {}
        for t in document["tensors"]:
            self.tensors_on_storage.setdefault(t["storage"], []).append(t["id"])
        self.freed = {storage_id: _base_release(self, storage_id, st) for storage_id, st in self.storages.items()}
        self.base_delta = step_deltas(((st["born"], self.freed[storage_id], st["nbytes"])
                                       for storage_id, st in self.storages.items()), self.n_steps)

    def output(self, entry):
        return self.tensors[self.tape[entry]["output"]]

    def recomputable(self, entry, saved=True):
        """The trace's rule (backend/trace/recompute.py); with `saved`, the output must also be worth it."""
        return refusal(self.tape[entry], self.tensors, self.saved_on_storage, require_saved=saved) is None

    def bytes_of(self, entry):
        return self.output(entry)["nbytes"]

    def flops_of(self, entry):
        """Recompute FLOPs: the op runs once per saver that needs it."""
        return self.tape[entry]["flops"] * len(self.savers.get(self.tape[entry]["output"], ()))


def predict_live_bytes(base, recompute):
    """Live bytes per step with the outputs of the `recompute` entries recomputed (see the module doc)."""
    delta = add_changes(base.base_delta.copy(), live_changes(base, recompute))
    return live_from_deltas(delta, base.n_steps)


def live_changes(base, recompute):
    """What recomputing these entries changes in the base prediction, as (step, ±bytes) difference points.

    Only the storages a recipe touches move: the recomputed outputs (no longer pinned by their savers), the
    recipes' stored sources (held until the recipes go) and the transient copies; the cost is in the size of
    `recompute`, not of the run, so the integer program can afford one call per unit.
    """
    recompute = set(recompute)
    if not recompute:
        return []
    produced = {base.tape[e]["output"]: e for e in recompute}
    sources = {e: [(produced.get(uid), base.tensors[uid]["storage"]) for uid in base.tape[e]["inputs"]]
               for e in recompute}
    held_until = _recipe_lifetimes(base, recompute, produced, sources)
    freed = {}
    for uid in produced:
        storage_id = base.tensors[uid]["storage"]
        st = base.storages[storage_id]
        if st["kind"] != "grad" and not st.get("extra"):
            freed[storage_id] = _tensor_held_release(base, storage_id, st, produced)
    for e, until in held_until.items():
        for producer, storage_id in sources[e]:
            if producer is None:
                freed[storage_id] = _later(freed.get(storage_id, base.freed[storage_id]), until)
    changes = []
    for storage_id, end in freed.items():
        before = base.freed[storage_id]
        if end != before:
            nbytes = base.storages[storage_id]["nbytes"]
            changes.append((release_point(before, base.n_steps), nbytes))
            changes.append((release_point(end, base.n_steps), -nbytes))
    for step, nbytes in _transients(base, recompute, produced, sources):
        changes.extend(lifetime_changes(step, step, nbytes, base.n_steps))      # made and dropped at the step
    return changes


def _base_release(base, storage_id, st):
    """The step the base run releases a storage, by the same rules as with recipes (none of them here)."""
    if st["kind"] == "grad" or st.get("extra"):
        return st["freed"]
    return _tensor_held_release(base, storage_id, st, {})


def _later(a, b):
    return None if a is None or b is None else max(a, b)


def _tensor_held_release(base, storage_id, st, produced):
    """Last Python drop, or the last saver pinning a non-recomputed tensor on this storage."""
    end = st["dropped"]
    if end is None:
        return None
    for uid in base.tensors_on_storage[storage_id]:
        if uid not in produced:
            for saver in base.savers.get(uid, ()):
                end = max(end, base.backward_step[saver])
    return end


def _recipe_lifetimes(base, recompute, produced, sources):
    """Step until which each recipe lives: its output Tensor, its savers, and downstream recipes holding it."""
    until, holders = {}, {}
    for d in recompute:
        for producer, _ in sources[d]:
            if producer is not None:
                holders.setdefault(producer, set()).add(d)
    for e in sorted(recompute, reverse=True):          # a recipe's holders come later in forward
        out = base.tape[e]["output"]
        dropped = base.tensors[out].get("dropped")
        steps = [dropped] + [base.backward_step[s] for s in base.savers.get(out, ())]
        steps += [until[d] for d in holders.get(e, ())]
        until[e] = None if any(s is None for s in steps) else max(steps)
    return until


def _chain(e, sources):
    found, stack = set(), [e]
    while stack:
        current = stack.pop()
        if current not in found:
            found.add(current)
            stack.extend(p for p, _ in sources[current] if p is not None)
    return found


def _transients(base, recompute, produced, sources):
    """(step, bytes) for each recipe evaluated in a saver's backward: once per saver and recipe."""
    by_saver = {}
    for uid, e in produced.items():
        for saver in base.savers.get(uid, ()):
            by_saver.setdefault(saver, set()).update(_chain(e, sources))
    for saver, evaluated in by_saver.items():
        step = base.backward_step[saver]
        for e in evaluated:
            yield step, base.bytes_of(e)
