"""torch.profiler's CPU memory events (profile_memory=True) beside a recorded document: the independent check.

The profiler reports every allocation and free of the CPU allocator on the threads it follows, with its address and
size. Two figures come out of it:

- `plain_peak`: a plain (unrecorded) step's peak = the most bytes its events held at once + the bytes that existed before
  the step (parameters, buffers, the batch: what the document calls setup storages);
- `live_by_step`: the same events from the *recorded* run, binned into the document's steps by identity
  — an allocation at address A of n bytes is the document's next storage (in birth order) if that one is at A with n bytes, a free at A
  is that storage's death — and, per step, the most bytes the allocator held at any moment of it.
  Allocations the document has no storage for (a kernel's scratch) stay in the step they happen in.
"""
import contextlib
import gc

import torch
from torch._C._profiler import _EventType
from torch.profiler import ProfilerActivity, profile

from backend.importers.torch_ddp import bucket_bytes
from backend.importers.torch_optimizer_state import state_tensors
from backend.importers.torch_storages import storage_address

LOOKAHEAD = 4       # storages whose allocation the profiler never reports (from_blob, another allocator) are skipped


# gloo's all-gather: the c10d op's kernel on the issuing thread, its work on gloo's own
ALL_GATHER_KERNELS = ("c10d::_allgather_base_", "c10d::allgather_", "gloo:all_gather")


def allocation_events(prof, collective_staging=True):
    """[(time_ns, address, bytes (negative: a free), total_allocated)] of the CPU allocator, in time order.

    Without `collective_staging`, what gloo's all-gather allocates for itself is left out, with its free: it stages
    its output in a flat tensor of the output's size, allocated and freed inside the c10d op's kernel on the
    issuing thread and again in its work on a gloo thread. No tensor of the step owns it and the dispatch mode sees
    only the c10d op, so no storage of a document is it (NCCL gathers into the output itself). What other
    collectives copy where the mode sees it (gloo's reduce-scatter's split input) is a storage, and stays."""
    found, stack = [], list(prof.profiler.kineto_results.experimental_event_tree())
    while stack:
        event = stack.pop()
        stack.extend(event.children)
        if event.tag == _EventType.Allocation:
            fields = event.extra_fields
            if str(fields.device) == "cpu":
                found.append((event.start_time_ns, fields.ptr, fields.alloc_size, fields.total_allocated,
                              not collective_staging and fields.alloc_size > 0 and _in_all_gather(event)))
    found.sort()
    staged, kept = set(), []
    for *fields, in_collective in found:
        address, nbytes = fields[1], fields[2]
        if in_collective:
            staged.add(address)
        elif nbytes < 0 and address in staged:
            staged.discard(address)
        else:
            kept.append(tuple(fields))
    return kept


def _in_all_gather(event):
    parent = event.parent
    while parent is not None:
        if parent.name.startswith(ALL_GATHER_KERNELS):
            return True
        parent = parent.parent
    return False


def profiled(fn, collective_staging=True):
    """(fn(), allocation events while it ran; without `collective_staging`, not gloo's all-gather's staging copies:
    see allocation_events).

    The profiler sees every allocation in the process, so the collector is paused inside the window: a cycle of old
    tensors freed mid-step would otherwise land among the step's own events (seen in the test suite, where earlier
    tests leave such garbage).
    """
    with collector_paused(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = fn()
    return result, allocation_events(prof, collective_staging)


@contextlib.contextmanager
def collector_paused():
    """The collector paused until the block ends: what a profiler sees in the block is the block's own allocations
    and frees (see profiled). Garbage left by earlier work stays where it is, unfreed, until the block ends: only the
    collector frees a cycle, so pausing it is enough. (Collecting first cost a full pass over the process each
    window: ~0.1 s in a command line that imported torch, up to ~0.5 s in a test process, 13% of the suite's
    non-browser CPU.)"""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def existing_bytes(model, batch_tensors, optimizer=None):
    """Bytes of the unique storages alive before the step: parameters, buffers, the batch, optimizer state, DDP's
    buckets."""
    tensors = [*model.parameters(), *model.buffers(), *batch_tensors]
    tensors += [value for _, _, value in state_tensors(optimizer)]
    unique = {storage_address(t.untyped_storage()): t.untyped_storage().nbytes() for t in tensors}
    return int(sum(unique.values())) + bucket_bytes(model)


def _running(events):
    """The bytes held at each event, counted from the step's start by the events themselves.

    Not the allocator's own running total: that one is process-wide and also moves for threads the profiler does
    not follow (their allocations and frees are never reported). Seen in CI: a gloo worker letting go of a
    131,072 B buffer it got before the window put a DDP step's peak exactly that much below what the step's own
    allocations held. The events reported are the step's."""
    held = 0
    for _, _, nbytes, _ in events:
        held += nbytes
        yield held


def plain_peak(events, existing):
    return int(existing + max(_running(events), default=0))


def live_by_step(document, events):
    """Per document step, the most bytes the allocator held during it (setup storages added)."""
    steps = len(document["steps"])
    existing = sum(s["nbytes"] for s in document["storages"] if s.get("setup"))
    best = [0] * steps
    step, total = 0, 0
    for previous, step, _, _, after, _ in _binned(document["storages"], steps, events):
        for between in range(previous + 1, step + 1):     # the steps in between held what was there when they began
            best[between] = total
        best[step] = max(best[step], total, after)
        total = after
    for after_last in range(step + 1, steps):
        best[after_last] = total
    return [int(existing + held) for held in best]


def unowned_allocations(storages, steps, events):
    """The allocations made during the step that are no storage of the run (a kernel's workspace: the buffer
    MkldnnRnnLayerBackward0 works in, a softmax's scratch), as [address, nbytes, born, freed]: the steps
    live_by_step's binning puts its allocation and its free in (freed None: still held when the events end)."""
    unowned, open_ = [], {}
    for _, step, address, nbytes, _, storage in _binned(storages, steps, events):
        if storage is not None:
            continue
        if nbytes > 0:
            open_[address] = [address, nbytes, step, None]
            unowned.append(open_[address])
        elif address in open_:
            open_.pop(address)[3] = step
    return unowned


def _binned(storages, steps, events):
    """Each allocator event with the document step it falls in: (the step before it, its step, address, bytes,
    the running total counted from the step's start, the storage it is or frees, else None)."""
    # Our storages are numbered in birth order and each is one allocation, so their allocations are a
    # subsequence of the profiler's, in id order; a scratch buffer at a reused address is not the next one.
    expected = [st for st in sorted(storages, key=lambda st: st["id"]) if not st.get("setup") and st["nbytes"] > 0]
    position = 0
    alive = {}
    step = 0
    for (_, address, nbytes, _), after in zip(events, _running(events)):
        found, storage = step, None
        if nbytes > 0:
            for ahead, candidate in enumerate(expected[position:position + LOOKAHEAD]):
                if (int(candidate["address"], 16), candidate["nbytes"]) == (address, nbytes):
                    position += ahead + 1
                    alive[address] = storage = candidate
                    found = candidate["born"]
                    break
        else:
            storage = alive.pop(address, None)
            if storage is not None and storage["freed"] is not None:
                found = storage["freed"]
        previous = step
        if found > step:
            step = min(found, steps - 1)
        yield previous, step, address, nbytes, after, storage
