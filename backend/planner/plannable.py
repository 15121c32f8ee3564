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


def refuse_unplannable(spec, error=None):
    """Raise PolicyError (a 400 on `checkpoint`) with plan_refusal's sentence when there is one."""
    reason = plan_refusal(spec, error)
    if reason is not None:
        raise PolicyError([{"path": "checkpoint", "message": reason}])
