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

With a gradient penalty (a double backward) the first backward is recorded and a second one (backward-2) runs
through it: a region's recorded vjp ops join its nested sweep, which ends one step later at its input's producer
node (the leaf keeps its history under create_graph); in backward-2 each checkpoint node runs again, replayed, one
step before its region's recomputed nodes, which run where the base run's own did; every saver releases at its
last sweep's step, and backward-2's += at a region's output is regrouped at the replay (docs/planner.md).

Live bytes at a step are the storages with born ≤ step ≤ freed, counted by the trace document's own memory core
(backend/trace/memory.py), so the predicted peak is checked byte for byte against the executed run.
"""
from backend.trace.memory import live_bytes


class Timeline:
    """The checkpointed run's step numbering, built from the base steps and the regions."""

    def __init__(self, base, regions):
        region_of_block = {block: r for r, region in enumerate(regions) for block in region}
        self.double = base.double_backward
        self._first_block = [region[0] for region in regions]
        self.n_forward = len(base.entry_block)
        self.unrecorded_region = {step: (micro, region_of_block[block])
                                  for step, (micro, block) in base.unrecorded_block.items() if block in region_of_block}
        self.region_of_entry = {e: (m, region_of_block[b]) if b in region_of_block else None   # keyed per micro-batch
                                for e, (b, m) in enumerate(zip(base.entry_block, base.entry_micro_batch))}
        for recorded, by in (base.recorded_for or {}).items():  # a recorded vjp op: recorded in its node's sweep
            self.region_of_entry[recorded] = None if by is None else self.region_of_entry.get(by)
        self.new = {}                    # base step -> checkpointed step (first forward / backward / optimizer)
        self.recompute = {}              # base forward step in a region -> its recompute step
        self.region_forward = {}         # region -> base forward steps
        self.region_backward = {}        # region -> base backward steps
        self.backward_step_of = base.last_sweep_step    # tape index -> base step of its node's last sweep
        self.sweep_end = {}              # region -> checkpointed step its nested sweep ends at
        self.replay_step = {}            # double backward: region -> its checkpoint node's step in backward-2
        self.region_backward_2 = {}      # double backward: region -> base backward-2 steps
        self.unrecorded_in = set()       # base forward steps of unrecorded ops inside a region
        stops = self._stopping_regions(base) if self.double else set()
        n, open_region = 0, None
        for s, (phase, entry) in enumerate(base.steps):
            region = self.region_at(base, s)
            if open_region is not None and (phase != "backward" or region != open_region):
                if open_region in stops:
                    # Under create_graph the region's input keeps its history: the nested sweep ends at its
                    # producer's node, which takes a step of its own (it runs later, in the outer sweep).
                    self.sweep_end[open_region], n = n, n + 1
                open_region = None
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
            if phase == "backward-2":
                # The checkpoint node runs again, replayed: it hands its adjoint to the recomputed region, whose
                # nodes (kept by create_graph) then run where the base run's own did.
                if region not in self.region_backward_2:
                    self.region_backward_2[region] = []
                    self.replay_step[region], n = n, n + 1
                elif self.region_backward_2[region][-1] != s - 1:
                    raise ValueError("a region's backward-2 is not contiguous: the chain model does not fit this graph")
                self.region_backward_2[region].append(s)
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
            open_region = region
        self.n_steps = n

    def _stopping_regions(self, base):
        """Regions whose input was produced by a recorded op (it has a node: not x, not a parameter)."""
        born_at = {st["id"]: st["born"] for st in base.storages if not st["setup"]}
        stopping = set()
        for micro in sorted(set(base.entry_micro_batch)):
            for region in {r for r in self.region_of_entry.values() if r is not None and r[0] == micro}:
                storage = base.block_inputs.get((micro, self._first_block[region[1]]))
                born = born_at.get(storage)
                if born is not None and base.steps[born][0] == "forward" and base.steps[born][1] is not None:
                    stopping.add(region)
        return stopping

    def region_at(self, base, step):
        phase, entry = base.steps[step]
        if phase == "forward" and entry is None:
            return self.unrecorded_region.get(step)
        if entry is None or phase not in ("forward", "backward", "backward-2"):
            return None
        if phase == "backward-2" and entry >= self.n_forward:
            return None                      # the recorded backward's own nodes run outside every region
        return self.region_of_entry.get(entry)

    def release_of(self, entry):
        """Where the checkpointed run's node for `entry` lets go of what it saved (None: never, in this run)."""
        step = self.backward_step_of.get(entry)
        return None if step is None else self.new[step]

    def released_by(self, entry, storage_is_input_of):
        """Where the checkpointed run releases what forward entry `entry` saved."""
        region = self.region_of_entry.get(entry)
        if not self.double and region is not None and storage_is_input_of == region:
            return self.sweep_end[region]
        return self.release_of(entry)

    def input_held_until(self, region):
        """A checkpoint holds its region's input until its nested sweep ends, or with a double backward until
        it runs again (replayed) in backward-2."""
        return self.replay_step[region] if self.double else self.sweep_end[region]


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
    savers = base.sweep_savers if base.sweep_savers is not None else base.savers
    moved = _replayed_sums(base, t) if t.double else {}
    for st in base.storages:
        if st["id"] in moved:
            yield from moved[st["id"]]
            continue
        born, freed, nbytes = st["born"], st["freed"], st["nbytes"]
        phase = base.steps[born][0]
        region = t.region_at(base, born)
        tensor_held = not st.get("extra") and st["kind"] != "grad"
        if phase == "forward" and region is not None and not st["setup"]:
            yield from _region_forward_copies(base, st, region, t, input_of, tensor_held, savers)
            continue
        new_born = 0 if st["setup"] else t.new[born]
        if phase == "backward" and region is not None:
            inside = freed is not None and t.region_at(base, freed) == region and base.steps[freed][0] == "backward"
            yield new_born, (t.new[freed] if inside else _outside_release(base, freed, t)), nbytes
        elif tensor_held:
            yield new_born, _first_copy_freed(base, st, None, t, input_of, savers), nbytes
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


def _first_copy_freed(base, st, own_region, t, input_of, savers):
    """A tensor-held storage without recording inside `own_region`: its last Tensor, or an outside holder."""
    dropped = st["dropped"]
    if dropped is None:
        steps = [None]
    elif t.double:      # a Tensor adjoint dropped in a region's sweep is the one entering it: held to the end
        steps = [_outside_release(base, dropped, t)]
    else:
        steps = [t.new[dropped]]
    for entry in savers.get(st["id"], ()):
        if entry not in base.last_sweep_step:       # no gradient reaches it (a detach or no_grad cut): its graph
            steps.append(_outside_release(base, st["freed"], t))       # goes as in the base run, no region near it
        elif t.region_of_entry.get(entry) != own_region or own_region is None:
            steps.append(t.released_by(entry, input_of.get(st["id"])))
    if st["id"] in input_of and input_of[st["id"]] != own_region:
        steps.append(t.input_held_until(input_of[st["id"]]))
    return latest_release(steps)


def _region_forward_copies(base, st, region, t, input_of, tensor_held, savers):
    born, nbytes, dropped = st["born"], st["nbytes"], st["dropped"]
    if tensor_held:
        yield t.new[born], _first_copy_freed(base, st, region, t, input_of, savers), nbytes
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
    for entry in savers.get(st["id"], ()):
        if t.region_of_entry.get(entry) == region:
            steps.append(t.release_of(entry))
    yield t.recompute[born], (latest_release(steps) if steps else t.recompute[born]), nbytes


def _replayed_sums(base, t):
    """Backward-2's += at a region's output, regrouped as the checkpointed run sums it.

    The region's own recorded vjps read the recomputed values, so their shares go to the recomputed nodes; every
    other consumer's share goes to the checkpoint node, which hands its sum on when it runs (replayed). Each
    group is summed as its shares arrive, and the two sums add at the checkpoint's replay step. Returns
    storage id -> the intervals that replace it (none for a base sum that no longer happens)."""
    by_target = {}
    for step, entry, target, parts, total in base.sums_2:
        by_target.setdefault(target, []).append((step, entry, parts, total))
    nbytes = {st["id"]: st["nbytes"] for st in base.storages}
    born = {st["id"]: st["born"] for st in base.storages}
    freed = {st["id"]: st["freed"] for st in base.storages}
    moved = {}
    for target, sums in by_target.items():
        producer = base.tensor_producer.get(target)
        region = t.region_of_entry.get(producer) if producer is not None else None
        if region is None or region not in t.replay_step:
            continue
        first = sums[0][2][0]
        shares = [(base.storage_born_entry.get(first), first)] + [(entry, parts[1]) for _, entry, parts, _ in sums]
        inside = [s for e, s in shares if e is not None and t.region_of_entry.get(e) == region]
        outside = [s for e, s in shares if s not in inside]
        if not inside or not outside:
            continue                        # one group: summed in the same order as in the base run
        consumed = _outside_release(base, freed[sums[-1][3]], t)
        intervals = {}
        for group in (inside, outside):
            current = group[0]
            intervals[current] = [t.new[born[current]], None]
            for share in group[1:]:
                at = t.new[born[share]]
                total = ("sum", share)
                intervals[current][1] = at
                intervals[share] = [at, at]
                intervals[total] = [at, None]
                current = total
            intervals[current][1] = t.replay_step[region]
        replay = t.replay_step[region]
        moved_here = {s: [] for s in [first] + [parts[1] for _, _, parts, _ in sums] + [total for *_, total in sums]}
        for key, (start, end) in intervals.items():
            storage = key[1] if isinstance(key, tuple) else key
            moved_here[storage].append((start, end, nbytes[storage]))
        moved_here[sums[-1][3]].append((replay, consumed, nbytes[sums[-1][3]]))
        for storage, spans in moved_here.items():
            moved.setdefault(storage, []).extend(spans)
    return moved
