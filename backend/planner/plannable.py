"""Why the planner refuses a run: one rule, one sentence per reason. The sentence is both the 400's `checkpoint`
problem (a predicate read after that path) and the trace document's `summary.plan_refusal`, so the page names the
reason without asking for a plan it would be refused."""
from backend.planner.policies import PolicyError


def plan_refusal(spec, error=None):
    """Why the planner cannot checkpoint a run of the normalized `spec`, or None when it can. `error` is the run's
    document error (a backward stopped by an in-place op); the spec's own reasons come first, as a request is
    refused for them before its base run is recorded."""
    if error is not None:
        return (f"has nothing to plan: this model's backward stops at step {error['step']} ({error['backward']}: "
                "an in-place op overwrote a saved tensor); trace it without a checkpoint to see where, and fix the "
                "in-place op first")
    return None


def recipe_refusal(spec):
    """Why selective recomputation (the selective and manual policies, the integer program's units) cannot run on
    this spec, or None. Checkpoint regions can: their recompute is recorded under create_graph."""
    if "gradient_penalty" in spec["loss"]:
        return ("cannot recompute selected outputs with loss.gradient_penalty: a recomputed output is re-derived as "
                "plain arrays when its consumer's backward unpacks it, so the second backward (through the recorded "
                "first one) cannot go through it; use every_k, sqrt or optimal (checkpoint regions, which recompute "
                "on the tape), or remove loss.gradient_penalty")
    return None


def refuse_unplannable(spec, error=None):
    """Raise PolicyError (a 400 on `checkpoint`) with plan_refusal's sentence when there is one."""
    reason = plan_refusal(spec, error)
    if reason is not None:
        raise PolicyError([{"path": "checkpoint", "message": reason}])
