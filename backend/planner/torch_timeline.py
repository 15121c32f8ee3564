"""The predictor for torch's non-reentrant checkpoint: a checkpointed run's live bytes, from the plain run's trace.

Our engine recomputes a region right after its checkpoint node's step (backend/planner/timeline.py); torch
does not, and a document whose `checkpointing.recompute` is "on_first_unpack" (the torch importer writes it)
is predicted with torch's own order, as torch.utils.checkpoint(use_reentrant=False) runs it:

- forward runs every op as before, but a region's ops save only placeholders: what the region made lives until
  its last Tensor is dropped (`dropped`), or until a holder outside the region lets go of it;
- a region's input is held by the checkpoint (its frame) until the region's last node with saved tensors has
  run; so are the outputs a selective policy keeps (`saved_ops`) that the recompute never reached;
- the recompute starts inside the first of the region's backward nodes that unpacks a saved tensor, and stops
  early (torch's early stop) at the last save: an op whose last save is one of its inputs is not re-run;
- a recomputed tensor that is saved is released by its last saver's node; one that is not dies when the recompute
  drops it (its `dropped` step replayed) or when the recompute stops; a kept output (selective) is not made
  again, it lives on from forward until that moment;
- everything else keeps its interval, re-timed.

Live bytes at a step are the storages with born ≤ step ≤ freed, counted by the trace document's own memory core
(backend/trace/memory.py).
"""
from backend.planner.base_run import BaseRun
from backend.planner.timeline import latest_release
from backend.trace.memory import live_bytes

RECOMPUTE_ON_FIRST_UNPACK = "on_first_unpack"


def recomputes_on_first_unpack(document):
    return (document.get("checkpointing") or {}).get("recompute") == RECOMPUTE_ON_FIRST_UNPACK


class TorchBase(BaseRun):
    """The plain (un-checkpointed) torch document's index (backend/planner/base_run.py), built once for every
    schedule; refused for a document whose checkpoints do not say they recompute on first unpack."""

    @classmethod
    def from_document(cls, document):
        if not recomputes_on_first_unpack(document):
            raise ValueError("this document does not say its checkpoints recompute on first unpack (torch's order); "
                             "predict our engine's runs with backend.planner.timeline")
        return super().from_document(document)


class Regions:
    """Where each region's recompute sits in backward, what it re-runs, and when its frame lets go."""

    def __init__(self, base, regions):
        self.of_block = {block: r for r, region in enumerate(regions) for block in region}
        self.of_entry = {e: self.of_block.get(b) for e, b in enumerate(base.entry_block) if b is not None}
        self.entries = [[] for _ in regions]
        for entry, r in sorted(self.of_entry.items()):
            if r is not None:
                self.entries[r].append(entry)
        self.input_of = {}                  # storage id -> regions whose checkpoint holds it as their input
        for r, region in enumerate(regions):
            self.input_of.setdefault(base.block_inputs[(1, region[0])], []).append(r)     # one micro-batch
        self.trigger, self.frame_end, self.rerun_entries, self.rerun, self.rerun_steps = {}, {}, {}, {}, {}
        for r, entries in enumerate(self.entries):
            saving = [e for e in entries if e in base.saving_entries and e in base.first_backward_step]
            if not saving:
                continue                    # saves nothing: no recompute, the frame goes after forward
            self.trigger[r] = min(base.first_backward_step[e] for e in saving)
            self.frame_end[r] = max(base.last_backward_step[e] for e in saving)
            last = max(saving)              # early stop: the recompute ends at the last save
            stop = last if last in base.saves_own_output else last - 1
            self.rerun_entries[r] = [e for e in entries if e <= stop and e in base.forward_step]
            self.rerun[r] = [base.forward_step[e] for e in self.rerun_entries[r]]
            self.rerun_steps[r] = set(self.rerun[r])

    def region_of_step(self, base, step):
        phase, entry = base.steps[step]
        return self.of_entry.get(entry) if phase == "forward" else None


class Timeline:
    """The checkpointed run's steps: the base steps, with each region's recompute before its trigger node's own."""

    def __init__(self, base, regions):
        self.new, self.recompute, self.recompute_end = {}, {}, {}
        trigger_of = {step: r for r, step in regions.trigger.items()}
        n = 0
        for s in range(len(base.steps)):
            r = trigger_of.get(s)
            if r is not None:
                for f in regions.rerun[r]:
                    self.recompute[(r, f)], n = n, n + 1
                if regions.rerun[r]:
                    self.recompute_end[r] = n - 1
            self.new[s], n = n, n + 1
        self.n_steps = n

    def at(self, step):
        return None if step is None else self.new[step]


def predict_live_bytes(base, regions, saved_ops=()):
    """Live bytes per step of the run with `regions` (block index lists) under torch's checkpoint, and each step's
    phase; `saved_ops` are the op names a selective policy keeps (their outputs are not recomputed)."""
    where = Regions(base, regions)
    timeline = Timeline(base, where)
    live = live_bytes(_intervals(base, where, timeline, set(saved_ops)), timeline.n_steps)
    phases = [None] * timeline.n_steps
    for s, new in timeline.new.items():
        phases[new] = base.steps[s][0]
    for (r, _), new in timeline.recompute.items():
        phases[new] = "backward"
    return live, phases


def _intervals(base, where, t, saved_ops):
    for st in base.storages:
        born, freed, nbytes = st["born"], st["freed"], st["nbytes"]
        if st.get("setup"):
            yield 0, t.at(freed), nbytes
            continue
        phase = base.steps[born][0]
        region = where.region_of_step(base, born)
        if phase == "forward" and region is not None:
            yield from _region_made(base, where, t, st, region, saved_ops)
        elif phase == "forward" and (st["id"] in where.input_of or _saved_in_regions(base, where, st["id"])):
            yield t.at(born), _first_copy_freed(base, where, t, st), nbytes
        else:
            yield t.at(born), t.at(freed), nbytes


def _saved_in_regions(base, where, storage):
    return any(where.of_entry.get(e) is not None for e in base.savers.get(storage, ()))


def _first_copy_freed(base, where, t, st):
    """When a forward storage's first copy goes, with the regions saving nothing: its last Tensor, a saver outside
    every region, or the frame of a region it enters."""
    steps = [t.at(st["dropped"])]
    for entry in base.savers.get(st["id"], ()):
        if where.of_entry.get(entry) is None:
            steps.append(t.at(base.last_backward_step.get(entry)))
    for r in where.input_of.get(st["id"], ()):
        steps.append(t.at(where.frame_end[r]) if r in where.frame_end else t.at(st["dropped"]))
    return latest_release(steps)


def _region_made(base, where, t, st, region, saved_ops):
    born, nbytes = st["born"], st["nbytes"]
    first_freed = _first_copy_freed(base, where, t, st)
    rerun = where.rerun_steps.get(region, set())
    producer = base.steps[born][1]
    kept = base.op_of(producer) in saved_ops
    if born not in rerun:
        # not re-run: made once; a kept output waits in the frame for a recompute that never reaches it
        held_by_frame = kept and region in where.frame_end
        yield t.at(born), latest_release([first_freed, t.at(where.frame_end[region])]) if held_by_frame else first_freed, nbytes
        return
    recompute_freed = _recompute_copy_freed(base, where, t, st, region, rerun)
    if kept:
        yield t.at(born), latest_release([first_freed, recompute_freed]), nbytes
        return
    yield t.at(born), first_freed, nbytes
    yield t.recompute[(region, born)], recompute_freed, nbytes


def _recompute_copy_freed(base, where, t, st, region, rerun):
    savers = [e for e in base.savers.get(st["id"], ()) if where.of_entry.get(e) == region]
    if savers:
        return max(t.at(base.last_backward_step[e]) for e in savers)
    dropped = st["dropped"]
    if dropped is not None and dropped in rerun:
        return t.recompute[(region, dropped)]
    return t.recompute_end[region]


def recompute_flops(base, regions, saved_ops=()):
    """FLOPs the recompute re-runs: the region ops before its early stop, less the outputs a policy keeps."""
    where = Regions(base, regions)
    return int(sum(base.flops[e] for rerun in where.rerun_entries.values() for e in rerun
                   if base.entry_op[e] not in saved_ops))
