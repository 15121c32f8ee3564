"""The predictor: replay the base run's storage intervals over a checkpoint schedule, with the trace's accounting.

A schedule is a list of regions (consecutive blocks). Replaying it re-times every storage of the un-checkpointed
run (the base document) onto the step sequence the checkpointed run will have:

- forward: a region's entries collapse into its one "checkpoint" step, where its activations are born and die
  (no_grad), except the block output that leaves the region;
- backward: when the sweep reaches a region, its checkpoint step is followed by the region's forward entries
  again (recompute) and then the region's own backward steps (the nested sweep);
- the nested sweep's seed and the gradients handed back to the region's inputs are new buffers, as the
  engine makes them.

Live bytes at a step are then the storages with born ≤ step ≤ freed, exactly as document.py counts them.
"""
from dataclasses import dataclass, field

import numpy as np

from backend.planner.blocks import block_of_scope, block_paths


@dataclass
class BaseRun:
    """What the replay reads from the un-checkpointed document: per step its entry and phase, per storage its life."""
    steps: list                 # (phase, entry)
    storages: list              # dicts: id, nbytes, kind, born, freed
    entry_block: list           # tape index -> block index or None
    holders: dict               # storage id -> tape indices whose entries saved a tensor on it
    output_storage: dict        # tape index -> storage id of its output
    flops: list                 # tape index -> forward FLOPs
    n_blocks: int
    tensors_on: dict = field(default_factory=dict)

    @classmethod
    def from_document(cls, document):
        paths = block_paths(document["spec"])
        tape = [e for e in document["tape"] if e["phase"] == "forward"]
        entry_block = [block_of_scope(e["scope"], paths) for e in tape]
        storage_of = {t["id"]: t["storage"] for t in document["tensors"]}
        holders = {}
        for t in document["tensors"]:
            for index in t["saved_by"]:
                holders.setdefault(t["storage"], set()).add(index)
        output_storage = {e["index"]: storage_of.get(e["output"]) for e in tape}
        steps = [(s["phase"], s["entry"]) for s in document["steps"]]
        return cls(steps, document["storages"], entry_block, holders, output_storage,
                   [e["flops"] for e in tape], len(paths))


def predict_live_bytes(base, regions):
    """Live bytes per step of the checkpointed run, predicted from `base` (a BaseRun)."""
    region_of = {}
    for r, region in enumerate(regions):
        for block in region:
            region_of[block] = r
    entry_region = [region_of.get(b) if b is not None else None for b in base.entry_block]
    plan = _retime(base, entry_region, len(regions))
    intervals = _intervals(base, plan, entry_region)
    n_steps = plan.n_steps
    delta = np.zeros(n_steps + 1, dtype=np.int64)
    for born, freed, nbytes in intervals:
        delta[born] += nbytes
        delta[n_steps if freed is None else freed + 1] -= nbytes
    return np.cumsum(delta)[:n_steps]


@dataclass
class _Plan:
    fwd: dict = field(default_factory=dict)        # base forward step -> new step (first forward)
    rec: dict = field(default_factory=dict)        # base forward step of a region entry -> recompute step
    bwd: dict = field(default_factory=dict)        # base backward/optimizer step -> new step
    region_fwd_steps: dict = field(default_factory=dict)   # region -> base forward steps
    region_bwd_steps: dict = field(default_factory=dict)   # region -> base backward steps
    last_inner: dict = field(default_factory=dict)  # region -> new step of its nested sweep's last node
    last_recompute: dict = field(default_factory=dict)
    n_steps: int = 0


def _step_region(base, entry_region, step):
    phase, entry = base.steps[step]
    if entry is None or phase not in ("forward", "backward") or entry >= len(entry_region):
        return None
    return entry_region[entry]


def _retime(base, entry_region, n_regions):
    plan = _Plan()
    for s, (phase, _entry) in enumerate(base.steps):
        r = _step_region(base, entry_region, s)
        if r is not None:
            (plan.region_fwd_steps if phase == "forward" else plan.region_bwd_steps).setdefault(r, []).append(s)
    n = 0
    seen_fwd, seen_bwd = set(), set()
    for s, (phase, _entry) in enumerate(base.steps):
        r = _step_region(base, entry_region, s)
        if phase == "forward" or phase == "setup":
            if r is None:
                plan.fwd[s], n = n, n + 1
            elif r not in seen_fwd:
                seen_fwd.add(r)
                for inner in plan.region_fwd_steps[r]:
                    plan.fwd[inner] = n
                n += 1
            continue
        if r is None:
            plan.bwd[s], n = n, n + 1
            continue
        if r in seen_bwd:
            continue
        seen_bwd.add(r)
        n += 1                                            # the checkpoint node's own step
        for inner in plan.region_fwd_steps[r]:
            plan.rec[inner], n = n, n + 1
        plan.last_recompute[r] = n - 1
        for inner in plan.region_bwd_steps.get(r, []):
            plan.bwd[inner], n = n, n + 1
        plan.last_inner[r] = n - 1
    plan.n_steps = n
    return plan


def _intervals(base, plan, entry_region):
    """(born, freed, nbytes) for every storage the checkpointed run will hold."""
    out = []
    step_region = [_step_region(base, entry_region, s) for s in range(len(base.steps))]
    for st in base.storages:
        born, freed, nbytes = st["born"], st["freed"], st["nbytes"]
        r_born = step_region[born]
        born_phase = base.steps[born][0]
        r_freed = step_region[freed] if freed is not None else None
        freed_phase = base.steps[freed][0] if freed is not None else None
        if r_born is None or born_phase != "forward":
            new_born = _map(plan, born)
            if r_freed is not None and freed_phase == "backward" and (r_born != r_freed or born_phase == "forward"):
                new_freed = plan.last_inner[r_freed]
            else:
                new_freed = _map(plan, freed)
            if born_phase == "backward" and r_born is not None and r_born != r_freed:
                # a gradient handed back out of the region: the leaf's buffer, then the engine's copy
                out.append((new_born, plan.last_inner[r_born], nbytes))
                out.append((plan.last_inner[r_born], _map(plan, freed), nbytes))
                continue
            out.append((new_born, new_freed, nbytes))
            if r_freed is not None and freed_phase == "backward" and born_phase == "backward" and r_born is None:
                # the region output's adjoint: the nested sweep's seed is a second buffer over it
                out.append((plan.last_recompute[r_freed], plan.bwd[freed], nbytes))
            continue
        # born inside region r_born during the forward
        r = r_born
        escapes = freed is None or r_freed != r
        if st["kind"] == "input":                 # a cached constant (a causal mask): made once, kept
            out.append((plan.fwd[born], _map(plan, freed), nbytes))
            continue
        first = plan.fwd[born]
        if escapes or _is_region_output(base, st["id"], plan, r):
            outside = [plan.bwd[s] for s in _release_steps(base, st["id"], entry_region, r)]
            last = None if freed is None else max([first, *outside, _map(plan, freed) if escapes else first])
            out.append((first, last, nbytes))
        elif not _is_extra(base, st, born):
            out.append((first, first, nbytes))
        if freed is not None and step_region[freed] == r:
            rec_freed = plan.rec[freed] if freed_phase == "forward" else plan.bwd[freed]
        else:
            rec_freed = plan.last_inner[r]
        out.append((plan.rec[born], rec_freed, nbytes))
    return out


def _map(plan, step):
    if step is None:
        return None
    return plan.fwd[step] if step in plan.fwd else plan.bwd[step]


def _is_region_output(base, storage_id, plan, r):
    return False


def _is_extra(base, storage, born):
    return False


def _release_steps(base, storage_id, entry_region, r):
    """Base backward steps of the entries outside region r that saved this storage."""
    holders = [i for i in base.holders.get(storage_id, ()) if entry_region[i] != r]
    return [s for s, (phase, entry) in enumerate(base.steps) if phase == "backward" and entry in holders]
