"""The predictor: the checkpointed run's memory, derived from the un-checkpointed (base) run's trace.

A schedule is a list of regions (runs of consecutive blocks), each run under checkpoint(). The checkpointed
run's steps are the base run's, re-timed: each region's forward gains one step (the checkpoint entry) and runs
unrecorded; in backward its checkpoint node's step is followed by the region's forward again (recompute) and
then its own backward steps (the nested sweep). Every base storage is then placed on that timeline by what
holds it, with the engine's rules:

- born in a region's forward: a first copy that lives until its last Tensor is dropped (nothing is saved),
  or until a holder outside the region releases it; and a recompute copy, released in the nested sweep the
  way the base run released it (the region's output is held by the checkpoint until its sweep ends);
- a region's input is held by its checkpoint entry until that region's nested sweep ends;
- the adjoint that enters a region is held until the region's nested sweep ends;
- everything else keeps its base interval, re-timed.

Under gradient accumulation every micro-batch runs its own forward and backward, and each checkpoints the same
regions: a region is then one per micro-batch, keyed (micro-batch, region), each with its own input, recompute
and nested sweep.

Live bytes at a step are the storages with born ≤ step ≤ freed, counted by the trace document's own memory core
(backend/trace/memory.py), so the predicted peak is checked byte for byte against the executed run.
"""
from backend.trace.memory import live_bytes


class Timeline:
    """The checkpointed run's step numbering, built from the base steps and the regions."""

    def __init__(self, base, regions):
        region_of_block = {block: r for r, region in enumerate(regions) for block in region}
        self.unrecorded_region = {step: (micro, region_of_block[block])
                                  for step, (micro, block) in base.unrecorded_block.items() if block in region_of_block}
        self.region_of_entry = [(m, region_of_block[b]) if b in region_of_block else None   # keyed per micro-batch
                                for b, m in zip(base.entry_block, base.entry_micro_batch)]
        self.new = {}                    # base step -> checkpointed step (first forward / backward / optimizer)
        self.recompute = {}              # base forward step in a region -> its recompute step
        self.region_forward = {}         # region -> base forward steps
        self.region_backward = {}        # region -> base backward steps
        self.backward_step_of = base.last_backward_step     # forward tape index -> base backward step
        self.sweep_end = {}              # region -> checkpointed step of its nested sweep's last node
        self.unrecorded_in = set()       # base forward steps of unrecorded ops inside a region
        n = 0
        for s, (phase, entry) in enumerate(base.steps):
            region = self.region_at(base, s)
            if phase == "forward":
                if region is not None and region not in self.region_forward:
                    self.region_forward[region] = []
                    n += 1                                  # the checkpoint entry's own step
                if region is not None and entry is None:
                    self.unrecorded_in.add(s)
                if region is not None:
                    self.region_forward[region].append(s)
                self.new[s], n = n, n + 1
                continue
            if region is None:
                self.new[s], n = n, n + 1
                continue
            if region not in self.region_backward:
                self.region_backward[region] = []
                n += 1                                      # the checkpoint node's step
                for f in self.region_forward[region]:
                    if f in self.unrecorded_in:     # an unrecorded op re-runs within the step before it
                        self.recompute[f] = n - 1
                    else:
                        self.recompute[f], n = n, n + 1
            elif self.region_backward[region][-1] != s - 1:
                raise ValueError("a region's backward is not contiguous: the chain model does not fit this graph")
            self.region_backward[region].append(s)
            self.new[s], n = n, n + 1
            self.sweep_end[region] = self.new[s]
        self.n_steps = n

    def region_at(self, base, step):
        phase, entry = base.steps[step]
        if phase == "forward" and entry is None:
            return self.unrecorded_region.get(step)
        if phase not in ("forward", "backward") or entry is None or entry >= len(self.region_of_entry):
            return None
        return self.region_of_entry[entry]

    def released_by(self, entry, storage_is_input_of):
        """Where the checkpointed run releases what forward entry `entry` saved."""
        region = self.region_of_entry[entry]
        if region is not None and storage_is_input_of == region:
            return self.sweep_end[region]
        return self.new[self.backward_step_of[entry]]


def predict_live_bytes(base, regions):
    """Live bytes per step of the checkpointed run, predicted from `base` (backend/planner/base_run.py's BaseRun)."""
    timeline = Timeline(base, regions)
    return live_bytes(_intervals(base, regions, timeline), timeline.n_steps)


def latest_release(steps):
    """The last of several release steps; None (alive at the end) wins."""
    return None if any(s is None for s in steps) else max(steps)


def _intervals(base, regions, t):
    input_of = {}                       # storage id -> (micro-batch, region) whose checkpoint entry saves it
    for micro in sorted(set(base.entry_micro_batch)):
        for r, region in enumerate(regions):
            storage = base.block_inputs.get((micro, region[0]))
            if storage is None:
                raise ValueError("the base run did not report block inputs; record it with the block driver")
            input_of[storage] = (micro, r)
    for st in base.storages:
        born, freed, nbytes = st["born"], st["freed"], st["nbytes"]
        phase = base.steps[born][0]
        region = t.region_at(base, born)
        tensor_held = not st.get("extra") and st["kind"] != "grad"
        if phase == "forward" and region is not None and not st["setup"]:
            yield from _region_forward_copies(base, st, region, t, input_of, tensor_held)
            continue
        new_born = 0 if st["setup"] else t.new[born]
        if phase == "backward" and region is not None:
            inside = freed is not None and t.region_at(base, freed) == region and base.steps[freed][0] == "backward"
            yield new_born, (t.new[freed] if inside else _outside_release(base, freed, t)), nbytes
        elif tensor_held:
            yield new_born, _first_copy_freed(base, st, None, t, input_of), nbytes
        else:
            yield new_born, _outside_release(base, freed, t), nbytes


def _outside_release(base, freed, t):
    """A base release step re-timed; one inside a region's sweep (that region's seed) waits for its end."""
    if freed is None:
        return None
    region = t.region_at(base, freed)
    if region is not None and base.steps[freed][0] == "backward":
        return t.sweep_end[region]
    return t.new[freed]


def _first_copy_freed(base, st, own_region, t, input_of):
    """A tensor-held storage without recording inside `own_region`: its last Tensor, or an outside holder."""
    dropped = st["dropped"]
    steps = [None if dropped is None else t.new[dropped]]
    for entry in base.savers.get(st["id"], ()):
        if t.region_of_entry[entry] != own_region or own_region is None:
            steps.append(t.released_by(entry, input_of.get(st["id"])))
    if st["id"] in input_of and input_of[st["id"]] != own_region:
        steps.append(t.sweep_end[input_of[st["id"]]])
    return latest_release(steps)


def _region_forward_copies(base, st, region, t, input_of, tensor_held):
    born, nbytes, dropped = st["born"], st["nbytes"], st["dropped"]
    if tensor_held:
        yield t.new[born], _first_copy_freed(base, st, region, t, input_of), nbytes
        if dropped is None:
            return                          # kept by the model (a cached mask): not made again
    steps = []
    if tensor_held:
        inside = t.region_at(base, dropped) == region and base.steps[dropped][0] == "forward"
        if inside:
            steps.append(t.recompute[dropped])
        elif st["kind"] == "weight_copy":   # autocast's cache held it; the recompute's own cache ends with it
            steps.append(t.recompute[t.region_forward[region][-1]])
        else:
            steps.append(t.sweep_end[region])
    for entry in base.savers.get(st["id"], ()):
        if t.region_of_entry[entry] == region:
            steps.append(t.new[t.backward_step_of[entry]])
    yield t.recompute[born], (max(steps) if steps else t.recompute[born]), nbytes
