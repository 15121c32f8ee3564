"""Checkpoint planning: policies, the chain DP, the replay predictor and executed schedules on one graph."""
from backend.planner.policies import POLICIES, PolicyError, validate
from backend.planner.schedules import Planner, SolveLimits

__all__ = ["Planner", "PolicyError", "POLICIES", "SolveLimits", "validate", "plan_document"]

HEURISTICS = ({"policy": "none"}, {"policy": "every_k", "k": 1}, {"policy": "every_k", "k": 2},
              {"policy": "sqrt"}, {"policy": "selective"})


def plan_document(spec, checkpoint, limits=SolveLimits()):
    """The checkpointed run's trace document for a normalized spec and a raw checkpoint request, with
    `schedule` (that run), `schedules` (every heuristic, each executed too) and `pareto` (the budget sweep).

    Raises PolicyError for a bad request. `limits` bounds the integer program's solves.
    """
    planner = Planner(spec, limits)
    n_blocks, activations = planner.base.n_blocks, set(planner.entry_activations)
    request = validate(checkpoint, n_blocks, activations)
    schedule = planner.schedule(request)
    document = schedule.pop("document")
    schedules = []
    for heuristic in HEURISTICS:
        if heuristic.get("k", 1) > n_blocks:
            continue
        point = validate({**heuristic, "preserve_rng_state": True}, n_blocks, activations)
        schedules.append(planner.schedule(point, keep_document=False))
    document.update({"schedule": schedule, "schedules": schedules, "pareto": planner.pareto()})
    return document
