"""Checkpoint planning: policies, the chain DP, the replay predictor and executed schedules on one graph."""
from backend.planner.policies import POLICIES, PolicyError, validate
from backend.planner.schedules import Planner

__all__ = ["Planner", "PolicyError", "POLICIES", "validate", "plan_document"]

HEURISTICS = ({"policy": "none", "params": {}}, {"policy": "sqrt", "params": {}},
              {"policy": "selective", "params": {}})


def plan_document(spec, checkpoint):
    """{schedule, schedules, pareto} for a normalized spec and a raw checkpoint request.

    `schedules` lists every heuristic's point predicted only (not executed) to keep a trace fast; the one
    requested `schedule` is executed. Raises PolicyError for a bad request.
    """
    planner = Planner(spec)
    request = validate(checkpoint, planner.base.n_blocks, set(planner.entry_activations))
    schedule = planner.schedule(request)
    schedule.pop("document", None)
    schedules = [planner.schedule({**h, "preserve_rng_state": True}, execute=False) for h in HEURISTICS]
    return {"schedule": schedule, "schedules": schedules, "pareto": planner.pareto()}
