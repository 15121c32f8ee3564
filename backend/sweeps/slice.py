"""The slice of a model the modes view can afford: the whole model when its n + m sweeps fit the work budget,
else the largest sub-batch that does.

A full Jacobian takes one sweep per input element forward and one per output element backward, and each sweep
costs about a training step: deep-mlp's 4,096 inputs are 8,192 sweeps, far over the budget. On fewer rows (and, for
a token model, a prefix of its sequence) the same model's lesson holds: which mode takes fewer sweeps, and what each
costs, measured the same way, every figure executed, none extrapolated. The report names the slice.
"""
from backend.driver.work import check_work
from backend.models import validate_spec
from backend.models.errors import CapError, SpecError
from backend.sweeps.report import sweeps_needed
from backend.sweeps.subject import sweep_counts


def _fits(spec):
    try:
        check_work(spec, None, sweeps_needed(sweep_counts(spec)))
    except (CapError, SpecError):
        return False
    return True


def _largest(fits, most):
    """The largest n in 1..most with fits(n) (fits is monotone), or 0 when none."""
    low, high = 0, most
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _sliced(spec, rows, positions=None):
    source = spec["input"] if positions is None else {**spec["input"], "seq": positions}
    try:
        return validate_spec({**spec, "batch": rows, "accumulate": 1, "input": source})
    except SpecError:
        return None


def modes_slice(spec):
    """(the normalized spec to run, the slice as {"batch", "of", "seq"?, "of_seq"?, "reason"}, or None when nothing
    was sliced). A token model whose single row is still over is cut to a prefix of its sequence too: under causal
    attention the first positions' outputs see only the first tokens, a block of the whole again."""
    if _fits(spec):
        return spec, None
    batch, tokens = spec["batch"], spec["input"]["kind"] == "tokens"
    rows = _largest(lambda n: _fits(_sliced(spec, n)) if n < batch else False, batch)
    positions = None
    if rows == 0 and tokens:
        seq = spec["input"]["seq"]
        positions = _largest(lambda n: n < seq and _fits(_sliced(spec, 1, n)), seq)
        rows = 1 if positions else 0
    if rows == 0:
        return spec, None                        # not even one row fits: the caller answers the 413 it gets
    sliced = _sliced(spec, rows, positions)
    part = f"the first {rows} of its {batch} rows" + (f", the first {positions} of its {spec['input']['seq']} positions"
                                                     if positions else "")
    return sliced, {
        "batch": rows, "of": batch, **({"seq": positions, "of_seq": spec["input"]["seq"]} if positions else {}),
        "reason": (f"the whole batch's {sweep_counts(spec)['inputs']:,} input elements are more sweeps than the work "
                   f"budget allows, so both modes run on {part} ({sweep_counts(sliced)['inputs']:,} input elements): "
                   "the same model on less data, where which mode takes fewer sweeps, and what each costs, is "
                   "measured the same way; every figure here is executed, none extrapolated"),
    }
