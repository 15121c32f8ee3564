"""The memory core: live bytes per step from lifetimes, the peak, and what is alive at a step.

A lifetime is (born, freed, nbytes): a storage allocated during step `born` and released during step `freed`
is live at every step s with born ≤ s ≤ freed, both ends included (its bytes still count at the step that frees
it). `freed` None means alive to the end of the run. Over a run of n steps a lifetime adds +nbytes to a difference
array at `born` and -nbytes at its release point, freed + 1 (n when never freed); live bytes are the running sum
of that array over the first n steps (the last slot, index n, only absorbs the releases past the end). A storage
record (born, freed, nbytes, kind) in a trace document is one such lifetime; views share their base's storage,
so each storage counts once.

The trace document, every planner's predictor (engine and torch order, regions and selective recomputation, the
integer program) and the peak's explanation count live bytes here, so a predicted peak and an executed one are
the same sum over the same rule. Bytes are int64 throughout: predictions are compared to executions exactly.
"""
import numpy as np

from backend.trace.memory_kinds import MEMORY_KIND_NAMES


def release_point(freed, n_steps):
    """The difference-array index where a lifetime stops counting: freed + 1, or n_steps when never freed."""
    return n_steps if freed is None else freed + 1


def step_deltas(lifetimes, n_steps):
    """The difference array (n_steps + 1 int64 slots) of an iterable of (born, freed, nbytes) lifetimes."""
    born, ends, nbytes = [], [], []
    for start, freed, size in lifetimes:
        born.append(start)
        ends.append(release_point(freed, n_steps))
        nbytes.append(size)
    delta = np.zeros(n_steps + 1, dtype=np.int64)
    if nbytes:
        sizes = np.asarray(nbytes, dtype=np.int64)
        np.add.at(delta, np.asarray(born, dtype=np.intp), sizes)
        np.add.at(delta, np.asarray(ends, dtype=np.intp), -sizes)
    return delta


def lifetime_changes(born, freed, nbytes, n_steps):
    """One lifetime as its two difference points: (born, +nbytes) and (its release point, -nbytes)."""
    return [(born, nbytes), (release_point(freed, n_steps), -nbytes)]


def add_changes(delta, changes):
    """Add (step, ±bytes) difference points to `delta` in place (a lifetime moved, a transient copy); returns it."""
    changes = list(changes)
    if changes:
        steps, nbytes = zip(*changes)
        np.add.at(delta, np.asarray(steps, dtype=np.intp), np.asarray(nbytes, dtype=np.int64))
    return delta


def live_from_deltas(delta, n_steps):
    """Live bytes at each of the n_steps steps: the running sum of the difference array."""
    return np.cumsum(delta)[:n_steps]


def live_bytes(lifetimes, n_steps):
    """Live bytes at each step (an int64 array of n_steps) of an iterable of (born, freed, nbytes) lifetimes."""
    return live_from_deltas(step_deltas(lifetimes, n_steps), n_steps)


def lifetimes_of(storages):
    """The (born, freed, nbytes) lifetime of each storage record."""
    return ((s["born"], s["freed"], s["nbytes"]) for s in storages)


def live_bytes_by_kind(storages, n_steps, kinds=MEMORY_KIND_NAMES):
    """(live, by_kind) of storage records (born, freed, nbytes, kind): the total per step and one array per kind,
    every kind in `kinds` present (zeros when none); a storage of another kind is a KeyError."""
    row_of = {kind: row for row, kind in enumerate(kinds)}
    rows, born, ends, nbytes = [], [], [], []
    for s in storages:
        rows.append(row_of[s["kind"]])
        born.append(s["born"])
        ends.append(release_point(s["freed"], n_steps))
        nbytes.append(s["nbytes"])
    delta = np.zeros((len(kinds), n_steps + 1), dtype=np.int64)
    if nbytes:
        rows, sizes = np.asarray(rows, dtype=np.intp), np.asarray(nbytes, dtype=np.int64)
        np.add.at(delta, (rows, np.asarray(born, dtype=np.intp)), sizes)
        np.add.at(delta, (rows, np.asarray(ends, dtype=np.intp)), -sizes)
    per_kind = np.cumsum(delta, axis=1)[:, :n_steps]
    by_kind = {kind: per_kind[row] for kind, row in row_of.items()}
    return per_kind.sum(axis=0), by_kind


def peak(live):
    """(peak_bytes, peak_step) of a live-bytes series: its largest value and the first step holding it."""
    step = int(np.argmax(live))
    return int(live[step]), step


def covers(born, freed, step):
    """Whether the lifetime (born, freed) covers `step`: born ≤ step ≤ freed, freed None to the end of the run."""
    return born <= step and (freed is None or step <= freed)


def is_alive(storage, step):
    """Whether a storage record's lifetime covers `step`."""
    return covers(storage["born"], storage["freed"], step)


def alive_at(step, storages):
    """The storage records alive at `step`, in their order."""
    return [s for s in storages if is_alive(s, step)]


def holders_at(step, tensors, storages):
    """The storages alive at `step`, grouped by (scope, kind): [{scope, kind, bytes, storages, tensors}], largest
    first; each storage record carries its scope (backend/trace/peak.py's assign_scopes)."""
    alive = {s["id"]: s for s in alive_at(step, storages)}
    groups = {}
    for storage in alive.values():
        key = (storage["scope"], storage["kind"])
        group = groups.setdefault(key, {"scope": key[0], "kind": key[1], "bytes": 0, "storages": [], "tensors": []})
        group["bytes"] += storage["nbytes"]
        group["storages"].append(storage["id"])
    for tensor in tensors:
        storage = alive.get(tensor["storage"])
        if storage is not None:
            groups[(storage["scope"], storage["kind"])]["tensors"].append(tensor["id"])
    return sorted(groups.values(), key=lambda g: (-g["bytes"], g["scope"], g["kind"]))
