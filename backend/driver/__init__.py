"""A trace request, start to end: validate the spec, price its work, take the engine, run (and plan) it under a
deadline, measure it. The trace and snapshot APIs both call `trace_spec`; the trace and planner packages never
call back up here, so neither imports the other's caller."""
import gc
from contextlib import contextmanager

from backend.driver.engine_slot import ENGINE_WAIT_S, EngineBusy, holding_engine
from backend.driver.work import check_work
from backend.models import validate_spec
from backend.planner import plan_document
from backend.planner.plannable import plan_refusal, refuse_unplannable
from backend.trace import deadline
from backend.trace.deadline import TimeBudgetExceeded
from backend.trace.run import measure_peak, record

__all__ = ["DEADLINE_S", "EngineBusy", "TimeBudgetExceeded", "run_bounded", "run_on_engine", "trace_spec"]

# An accepted request is priced to finish in about half of this (backend/driver/work.py); the deadline is for
# a machine busier than the one the price was measured on. Past it the run stops and the API answers 503.
DEADLINE_S = 8.0


def trace_spec(spec, checkpoint=None, measure=True, deadline_s=None, wait_s=None):
    """Validate `spec`, run it under the recorder and return the trace document.

    With `checkpoint` ({"policy", ...}), the planner picks the regions, the document is the checkpointed run
    (recompute steps included) and gains `schedule`, `schedules` and `pareto`. Either way `summary.plan_refusal`
    is the sentence the planner refuses a checkpoint of this spec with, or None when it plans one.

    Raises SpecError / CapError (from backend.models) for a bad or oversized spec before allocating, CapError("work") for one that would
    run too long, PolicyError for a bad checkpoint, EngineBusy when the engine stays taken for `wait_s`, and
    TimeBudgetExceeded when the run passes `deadline_s`.
    """
    def run(normalized, limits):
        regions, preserve, recompute = (), True, None
        if checkpoint is None:
            document, _ = record(normalized)
        else:
            document = plan_document(normalized, checkpoint, limits)
            schedule = document["schedule"]
            regions, preserve = schedule["block_regions"], schedule["preserve_rng_state"]
            recompute = schedule["recompute_entries"] or None
        document["summary"]["plan_refusal"] = plan_refusal(normalized, document["error"])
        if measure:
            document["summary"]["measured_peak_bytes"] = measure_peak(normalized, regions, preserve, recompute)
        return document
    return run_on_engine(spec, checkpoint, run, deadline_s, wait_s)


def run_on_engine(spec, checkpoint, job, deadline_s=None, wait_s=None, runs=1):
    """`job(normalized spec, limits)` under a trace's guards: priced by the work cap as `runs` traces of (spec,
    checkpoint) are, the engine held (EngineBusy after `wait_s`), the deadline running, the collector paused.

    For endpoints that run the engine on their own terms (several planned runs of one spec); `limits` are the
    integer program's time limits left by the price.
    """
    normalized = validate_spec(spec)
    if checkpoint is not None:
        refuse_unplannable(normalized)        # a 400 before the request is priced, as the planner would refuse it
    priced = check_work(normalized, checkpoint, runs)
    with _guarded(deadline_s, wait_s), _collector_paused():
        return job(normalized, priced.limits)


def run_bounded(job, deadline_s=None, wait_s=None):
    """`job()` holding the engine under the deadline, for work bounded by its own small caps rather than priced from
    a spec (the matrix chain, at most 64 wide): the engine's listeners are process-wide, so even that takes it."""
    with _guarded(deadline_s, wait_s):
        return job()


@contextmanager
def _guarded(deadline_s=None, wait_s=None):
    """The engine held (EngineBusy after `wait_s`, default ENGINE_WAIT_S) and the deadline (DEADLINE_S) running."""
    deadline_s = DEADLINE_S if deadline_s is None else deadline_s
    with holding_engine(ENGINE_WAIT_S if wait_s is None else wait_s, deadline_s), deadline.running(deadline_s):
        yield


@contextmanager
def _collector_paused():
    """No cyclic garbage collection during a run: a run makes millions of small dicts, and the collector's
    passes over them grow with the heap (nearly half the time at 20,000 entries). The engine frees by
    reference counting, so nothing a run measures waits for the collector."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
