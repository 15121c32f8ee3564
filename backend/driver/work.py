"""The work cap: a request priced from its spec alone, before anything is allocated, in engine microseconds.

Placeholder coefficients; calibrated below.
"""
from backend.models.errors import CapError
from backend.models.spec import plan

ENTRY_US = 200.0
MATMUL_FLOP_US = 0.0
ELEMENT_US = 0.0
PLAIN_RUNS = 2.0
PLANNED_RUNS = 8.0
WORK_BUDGET_US = 4_000_000


def estimate_work_us(spec, checkpoint=None):
    tally = plan(spec)
    per_run = ENTRY_US * tally.entries + MATMUL_FLOP_US * tally.matmul_flops + ELEMENT_US * tally.activation_elements
    return int(per_run * (PLAIN_RUNS if checkpoint is None else PLANNED_RUNS))


def check_work(spec, checkpoint=None):
    work = estimate_work_us(spec, checkpoint)
    if work > WORK_BUDGET_US:
        raise CapError("work", WORK_BUDGET_US, work, path="checkpoint" if checkpoint is not None else "spec")
