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

A double backward (a gradient penalty: the first backward recorded under create_graph, then backward-2 through it)
runs every saver's backward twice and releases its recipes only in backward-2. In backward-1 the recomputed values
are handed to the recorded vjp as Tensors (backend/tape/remat.py): each lives from the saver's step to the vjp's
last op, or, when a recorded op saved it (or a view of it), until backward-2 reaches that op, in place of the
original, which the recorded ops no longer pin. In backward-2 the recipes are evaluated once more, as transients.
"""
from backend.trace.memory import add_changes, lifetime_changes, live_from_deltas, release_point, step_deltas
from backend.trace.recompute import refusal, tape_use


class SelectiveBase:
    """What the prediction reads from the base (un-checkpointed) run: the base-run index (backend/planner/base_run.py)
    seen by tensor and entry, and the base run's releases by the rules above."""

    def __init__(self, run):
        self.tape = run.tape[:len(run.entry_op)]           # the forward entries, numbered 0, 1, ... in order
        self.tensors = run.tensors
        self.storages = {s["id"]: s for s in run.storages}
        self.sweep_steps = run.sweep_steps                 # entry -> the steps its node ran, one per sweep
        self.backward_step = {entry: steps[-1] for entry, steps in self.sweep_steps.items()}   # where it releases
        self.savers = {}                                   # tensor id -> forward entries saving it (recipe holders)
        self.pinned_by = {}                                # tensor id -> every entry saving it, recorded vjps' too
        for entry in run.tape:
            for uid in entry["saved"]:
                self.pinned_by.setdefault(uid, []).append(entry["index"])
                if entry["phase"] == "forward":
                    self.savers.setdefault(uid, []).append(entry["index"])
        self.n_steps = len(run.steps)
        self.double_backward = run.double_backward
        self.recorded_for = run.recorded_for
        self.vjp_end = _vjp_ends(self, run) if self.double_backward else {}
        self.use = tape_use(self.tensors.values(), self.sweep_steps)
        self.tensors_on_storage = {}
        for t in self.tensors.values():
            self.tensors_on_storage.setdefault(t["storage"], []).append(t["id"])
        self.freed = {storage_id: _base_release(self, storage_id, st) for storage_id, st in self.storages.items()}
        self.base_delta = step_deltas(((st["born"], self.freed[storage_id], st["nbytes"])
                                       for storage_id, st in self.storages.items()), self.n_steps)

    def output(self, entry):
        return self.tensors[self.tape[entry]["output"]]

    def recomputable(self, entry, saved=True):
        """The trace's rule (backend/trace/recompute.py); with `saved`, the output must also be worth it."""
        return refusal(self.tape[entry], self.tensors, self.use, require_saved=saved) is None

    def bytes_of(self, entry):
        return self.output(entry)["nbytes"]

    def flops_of(self, entry):
        """Recompute FLOPs: the op runs once per saver that needs it, in every sweep that saver's node runs."""
        savers = self.savers.get(self.tape[entry]["output"], ())
        return self.tape[entry]["flops"] * sum(len(self.sweep_steps.get(s, ())) for s in savers)

    def backward_1_holders(self, saver, storage_id):
        """Backward-1's recorded ops of `saver` that saved a tensor on this storage: they keep a recomputed copy."""
        return [r for uid in self.tensors_on_storage[storage_id] for r in self.pinned_by.get(uid, ())
                if self.recorded_for.get(r) == saver]


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
    for born, end, nbytes in _transients(base, recompute, produced, sources):
        changes.extend(lifetime_changes(born, end, nbytes, base.n_steps))
    return changes


def _base_release(base, storage_id, st):
    """The step the base run releases a storage, by the same rules as with recipes (none of them here)."""
    if st["kind"] == "grad" or st.get("extra"):
        return st["freed"]
    return _tensor_held_release(base, storage_id, st, {})


def _later(a, b):
    return None if a is None or b is None else max(a, b)


def _tensor_held_release(base, storage_id, st, produced):
    """Last Python drop, or the last saver pinning a non-recomputed tensor on this storage. When a recomputed
    output lives here, a recorded vjp op's save pins the recomputed copy instead (see the module doc)."""
    end = st["dropped"]
    if end is None:
        return None
    copied = any(uid in produced for uid in base.tensors_on_storage[storage_id])
    for uid in base.tensors_on_storage[storage_id]:
        if uid not in produced:
            for saver in base.pinned_by.get(uid, ()):
                if not (copied and saver in base.recorded_for):
                    # a saver no gradient reaches (before a detach or no_grad cut) holds it until its graph goes,
                    # as the base run saw: nothing it saves is recomputed (recompute.refusal)
                    held = base.backward_step[saver] if saver in base.backward_step else st["freed"]
                    if held is None:
                        return None
                    end = max(end, held)
    return end


def _vjp_ends(base, run):
    """forward entry -> the last step of its backward-1 vjp: where the gradients it hands on were made (its
    += of shares comes after), or its own step when its vjp records nothing."""
    ends = {}
    for item in run.sweep:
        if run.steps[item["step"]][0] != "backward" or item["entry"] >= len(base.tape):
            continue
        made = [base.storages[base.tensors[c["grad"]]["storage"]]["born"] for c in item["contributions"]
                if c["grad"] in base.tensors]
        ends[item["entry"]] = max([item["step"]] + made)
    return ends


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
    """(born, freed, bytes) for each recipe evaluated in a saver's backward: once per saver, recipe and sweep.
    Born and freed at that step, but a value backward-1's recorded vjp reads lives on (see the module doc)."""
    by_saver = {}
    for uid, e in produced.items():
        for saver in base.savers.get(uid, ()):
            by_saver.setdefault(saver, set()).update(_chain(e, sources))
    for saver, evaluated in by_saver.items():
        for step in base.sweep_steps[saver]:
            handed = base.double_backward and step != base.backward_step[saver]      # backward-1's, on the tape
            for e in evaluated:
                out = base.tape[e]["output"]
                end = step
                if handed and saver in base.savers.get(out, ()):
                    holders = base.backward_1_holders(saver, base.tensors[out]["storage"])
                    end = max([base.vjp_end[saver]] + [base.backward_step[r] for r in holders])
                yield step, end, base.bytes_of(e)
