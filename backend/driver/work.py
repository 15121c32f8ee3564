"""The work cap: a request priced from its spec alone, before anything is allocated, in CPU microseconds.

    request = ENTRY_US · tape entries + MATMUL_FLOP_US · matmul FLOPs + ELEMENT_US · activation elements
              (one recorded run, its document and the tracemalloc run: what POST /api/trace does without a
              checkpoint)
    planned = PLANNED_RUNS · request + PLANNER_ENTRY_US · tape entries + the integer program's minimum time
              (the base run, the requested run, up to four executed heuristics, the measurement; the
              predictions, the program's construction and the sweep)

A step of `accumulate` N micro-batches records N tapes: N times the entries (the FLOPs and elements stay those
of the whole batch). Under `precision`, every entry may cast its inputs first (CAST_ENTRIES_PER_ENTRY more
entries, each copying its elements), and the low-precision arithmetic is slow in numpy: float16's matmul has no BLAS
kernel (23x float32's time) and ml_dtypes' bfloat16 runs a whole step 4-9x slower than the float32 price, so the
matmul FLOPs of both (and of a float16 spec dtype) are priced at FLOAT16_MATMUL_FLOP_US, an upper bound for each.

The coefficients were measured on the 2-core machine the issue names, in CPU time (`python bench/scale.py
--calibrate` prints each term's spec with its measured and priced seconds) and rounded up ~15%. A request
priced over WORK_BUDGET_US is refused with 413 naming the "work" cap. The integer program's time limits
come out of what the price leaves under the budget, so an accepted request stays within it.
"""
from dataclasses import dataclass

from backend.models.errors import CapError
from backend.models.spec import plan
from backend.planner import SolveLimits

WORK_BUDGET_US = 5_000_000       # 5 s of CPU: the deadline (8 s of wall time) covers a machine twice as busy

ENTRY_US = 250.0                 # measured 216 µs per entry (issue 15's spec, 8,195 entries)
MATMUL_FLOP_US = 0.18e-3         # measured 0.157 ns per forward FLOP (batch 1024, 4 x linear 1024)
FLOAT16_MATMUL_FLOP_US = 7e-3    # numpy float16 matmul ran at 0.5 GFLOP/s against float32's 20 (bench/training_knobs.py)
CAST_ENTRIES_PER_ENTRY = 1.0     # autocast's casts: at most about one per recorded op
ELEMENT_US = 0.02                # measured 16 ns per activation element (batch 4096 x 1024, 6 x tanh)
PLANNED_RUNS = 2.5               # a planned request's runs, in plain requests (measured 2.2-2.5)
PLANNER_ENTRY_US = 300.0         # predictions, units and program per entry beyond the runs (measured 226)
MIN_SOLVE_S = 0.2                # the least time the program gets (the sweep's, and an "optimal" request's)
MAX_SOLVE_S = SolveLimits()      # and the most, when the price leaves room


@dataclass(frozen=True)
class Price:
    work_us: int                 # the estimate that is compared with the budget
    limits: SolveLimits          # the integer program's share of what is left under the budget


def estimate_work_us(spec, checkpoint=None):
    """The price of tracing a normalized spec (with a raw checkpoint request or None), in CPU µs."""
    return price(spec, checkpoint).work_us


def price(spec, checkpoint=None):
    tally = plan(spec)
    entries, elements = tally.entries * spec.get("accumulate", 1), tally.activation_elements
    precision = spec.get("precision")
    if precision is not None:
        entries += CAST_ENTRIES_PER_ENTRY * entries
        elements += elements
    low = spec["dtype"] == "float16" or precision is not None
    request_us = (ENTRY_US * entries + (FLOAT16_MATMUL_FLOP_US if low else MATMUL_FLOP_US) * tally.matmul_flops
                  + ELEMENT_US * elements)
    if checkpoint is None:
        return Price(int(request_us), SolveLimits())
    solves = 2 if _policy(checkpoint) == "optimal" else 1
    planned_us = PLANNED_RUNS * request_us + PLANNER_ENTRY_US * entries + solves * MIN_SOLVE_S * 1e6
    spare_s = max(0.0, (WORK_BUDGET_US - planned_us) / 1e6) / solves
    limits = SolveLimits(requested_s=min(MAX_SOLVE_S.requested_s, MIN_SOLVE_S + spare_s),
                         sweep_s=min(MAX_SOLVE_S.sweep_s, MIN_SOLVE_S + spare_s))
    return Price(int(planned_us), limits)


def check_work(spec, checkpoint=None, runs=1):
    """The price of a request within the budget, or CapError("work") naming the estimate and the budget.

    `runs`: how many requests of this price one call makes (the levers trace several edited specs)."""
    priced = price(spec, checkpoint)
    if runs != 1:
        priced = Price(int(runs * priced.work_us), priced.limits)
    if priced.work_us > WORK_BUDGET_US:
        advice = (f"it would take about {priced.work_us / 1e6:.1f} s of engine time (µs are the unit) against a "
                  f"{WORK_BUDGET_US / 1e6:g} s budget: make the model, batch or sequence smaller"
                  + (", or trace it without a checkpoint" if checkpoint is not None else ""))
        raise CapError("work", WORK_BUDGET_US, priced.work_us, path="checkpoint" if checkpoint is not None else "spec",
                       advice=advice)
    return priced


def _policy(checkpoint):
    return checkpoint.get("policy") if isinstance(checkpoint, dict) else None
