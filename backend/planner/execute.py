"""The executed side of a schedule: the recorded checkpointed run, and its gradients against the base run's."""
import numpy as np

from backend.trace.run import record


def record_regions(spec, regions, preserve_rng_state=True):
    """The trace document of one checkpointed run, and its parameter gradients."""
    return record(spec, [list(region) for region in regions], preserve_rng_state)


def grad_mismatch(grads, reference):
    """Max |difference| per parameter against an un-checkpointed reference run (0.0 where bitwise equal)."""
    mismatch = {}
    for name, ref in reference.items():
        got = grads.get(name)
        if ref is None or got is None:
            mismatch[name] = 0.0 if ref is got else float("inf")
        else:
            mismatch[name] = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64)), initial=0.0))
    return mismatch
