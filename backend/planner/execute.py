"""The executed side of a schedule: the recorded checkpointed run, and its gradients against the base run's."""
import numpy as np

from backend.trace.run import record


def record_regions(spec, regions, preserve_rng_state=True):
    """The trace document of one checkpointed run, and its parameter gradients."""
    return record(spec, [list(region) for region in regions], preserve_rng_state)


def grad_mismatch(grads, reference):
    """Max |difference| per parameter against an un-checkpointed reference run (0.0 where bitwise equal: an inf
    or NaN where the reference has the same one counts as equal, as a float16 overflow makes both runs)."""
    mismatch = {}
    for name, ref in reference.items():
        got = grads.get(name)
        if ref is None or got is None:
            mismatch[name] = 0.0 if ref is got else float("inf")
        elif np.array_equal(got, ref, equal_nan=True):
            mismatch[name] = 0.0
        else:
            with np.errstate(invalid="ignore"):
                difference = np.abs(got.astype(np.float64) - ref.astype(np.float64))
            mismatch[name] = float(np.max(np.where(np.isnan(difference), np.inf, difference), initial=0.0))
    return mismatch
