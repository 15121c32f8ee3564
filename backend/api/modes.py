"""Forward vs reverse API: POST /api/modes (a spec's Jacobians built by JVP and by VJP sweeps, executed and metered;
one JVP sweep stepped) and POST /api/matrix-chain (the matrix-chain lesson at chosen widths, analytic and executed,
executed scaled down to the chain_executed_width cap, so it needs no work price).

/api/modes runs under a trace's guards (backend/driver): it is priced as one trace per sweep it will run (a sweep
is never dearer than a recorded training step); a model whose n + m sweeps are over the budget runs on the largest
sub-batch that fits (backend/sweeps/slice.py, named in the report's "slice"), and only one whose single row is over
gets 413 "work". A report is a function of the model and the direction, so it is kept as a trace is (api/trace.py's
`answered`: the same request again is sent the report without the engine, header X-Modes-Cache: hit).
"""
from flask import Blueprint, jsonify

from backend.api.bodies import json_object_body
from backend.api.compression import json_answer
from backend.api.errors import ApiError
from backend.api.trace import MODES_CACHE, answered, engine_limits
from backend.api.trace_cache import request_key
from backend.driver import run_bounded, run_on_engine
from backend.models import fields, validate_spec
from backend.models.caps import cap
from backend.sweeps.chain import matrix_chain
from backend.sweeps.report import modes_report, sweeps_needed
from backend.sweeps.slice import modes_slice
from backend.sweeps.subject import sweep_counts
from backend.problems import Problems
from backend.trace.failure import is_version_error

modes_api = Blueprint("modes_api", __name__)

MIN_CHAIN_WIDTHS = 3         # n0 … n3 by default: a chain of two to cap("chain_widths") - 1 Jacobians


@modes_api.post("/api/modes")
def modes():
    """{input, jacobians: {loss, logits}, jvp_sweep} for {"spec", "direction"?: {"element": k}}."""
    body = json_object_body('{"spec": {...}, "direction": {"element": 0}}')
    if "spec" not in body:
        raise ApiError(400, "No spec to differentiate.", [{"path": "spec", "message": "is required: the model"}])
    normalized, sliced = modes_slice(validate_spec(body["spec"]))
    counts = sweep_counts(normalized)
    element = _direction(body.get("direction"), counts["inputs"])
    try:
        answer, kept = answered(MODES_CACHE, request_key(normalized, {"direction": element}), lambda limits: {
            **run_on_engine(normalized, None, lambda spec, _: modes_report(spec, element), runs=sweeps_needed(counts),
                            **limits),
            "slice": sliced})
    except RuntimeError as error:
        if not is_version_error(error):
            raise
        raise ApiError(400, "This model's backward stops at a version error, so there is no Jacobian to build.", [{
            "path": "spec.layers", "message": "an in-place op overwrites a tensor an earlier op saved for backward: "
                                              "make it out of place (\"inplace\": false) to compare the modes; "
                                              f"the engine said: {str(error)[:300]}"}]) from None
    return json_answer(answer.body, answer.compressed, {"X-Modes-Cache": "hit" if kept else "miss"})


@modes_api.post("/api/matrix-chain")
def chain():
    """{analytic, executed} for {"widths": [n0, n1, n2, n3]}."""
    body = json_object_body('{"widths": [4096, 4096, 4096, 1]}')
    widths = body.get("widths")
    shape_ok = isinstance(widths, list) and MIN_CHAIN_WIDTHS <= len(widths) <= cap("chain_widths")
    if not shape_ok:
        raise ApiError(400, "The widths are not a chain.", [{"path": "widths", "message":
                       f"must be a list of {MIN_CHAIN_WIDTHS} to {cap('chain_widths')} widths n0 … n_L, "
                       "such as [4096, 4096, 4096, 1]"}])
    problems = Problems()
    for i, n in enumerate(widths):
        fields.integer(n, f"widths[{i}]", problems, 1, cap("chain_width"))
    if problems:
        raise ApiError(400, "Some widths are out of range.", problems)
    return jsonify(run_bounded(lambda: matrix_chain(widths), **engine_limits()))


def _direction(direction, inputs):
    """The input element the stepped JVP sweep follows (0 when not given)."""
    if direction is None:
        return 0
    element = direction.get("element") if isinstance(direction, dict) else None
    problems = Problems()
    fields.integer(element, "direction.element", problems, 0, inputs - 1)     # the element the JVP sweep follows
    if problems:
        raise ApiError(400, "The direction is not an input element.", problems)
    return element
