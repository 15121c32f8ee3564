"""Checkpointing under a gradient penalty (a recorded backward, then backward-2 through it): every region plan and
every selective recomputation (selective, manual picks, the integer program's units) is predicted byte for byte,
step by step, with bitwise gradients."""
import numpy as np
import pytest

from backend.models import presets, validate_spec
from backend.planner import Planner, plan_document, validate
from backend.planner.selective import predict_live_bytes

# Knobs on top of the preset: deeper and wider (a repeat), dropout + gelu + sigmoid (RNG replay inside a region,
# an op saving its input), and a residual block under a sum loss (a region output read twice).
VARIANTS = {
    "gradient-penalty": {},
    "gradient-penalty+deeper-wider": {
        "batch": 32, "layers": [{"type": "repeat", "times": 4, "layers": [{"type": "linear", "out": 96}, {"type": "tanh"}]},
                                {"type": "linear", "out": 48}, {"type": "relu"}, {"type": "linear", "out": 1}]},
    "gradient-penalty+dropout": {
        "layers": [{"type": "linear", "out": 64}, {"type": "gelu"}, {"type": "dropout", "p": 0.2},
                   {"type": "linear", "out": 64}, {"type": "sigmoid"}, {"type": "linear", "out": 1}]},
    "gradient-penalty+residual": {
        "layers": [{"type": "linear", "out": 64}, {"type": "residual", "layers": [{"type": "linear", "out": 64}, {"type": "tanh"}]},
                   {"type": "relu"}, {"type": "linear", "out": 1}],
        "loss": {"type": "sum", "gradient_penalty": {"weight": 1.0}}},
}


@pytest.fixture(scope="module", params=list(VARIANTS))
def planner(request):
    return Planner(validate_spec({**presets.get("gradient-penalty"), **VARIANTS[request.param]}))


def region_requests(planner):
    n = planner.base.n_blocks
    budgets = sorted({point["budget_bytes"] for point in planner.pareto()})
    return ([{"policy": "none"}, {"policy": "sqrt"}] + [{"policy": "every_k", "k": k} for k in range(1, n + 1)]
            + [{"policy": "optimal", "budget_bytes": b} for b in [1, *budgets]])


def test_every_region_plan_is_predicted_byte_for_byte_with_bitwise_grads(planner):
    for raw in region_requests(planner):
        schedule = planner.schedule(validate(raw, planner.base.n_blocks, set(planner.entry_activations)))
        assert schedule["predicted_peak_bytes"] == schedule["executed_peak_bytes"], raw
        assert schedule["grads_match"] is True, raw


def test_the_preset_s_figures():
    """Literal peaks: every region keeps its recompute alive into backward-2, so checkpointing costs memory here."""
    planner = Planner(validate_spec(presets.get("gradient-penalty")))
    peaks = {}
    for raw in [{"policy": "none"}, {"policy": "every_k", "k": 1}, {"policy": "every_k", "k": 2}, {"policy": "sqrt"}]:
        schedule = planner.schedule(validate(raw, planner.base.n_blocks, set(planner.entry_activations)))
        peaks[schedule["policy"] + str(schedule["params"].get("k", ""))] = schedule["executed_peak_bytes"]
        assert schedule["predicted_peak_bytes"] == schedule["executed_peak_bytes"]
    assert peaks == {"none": 161296, "every_k1": 226832, "every_k2": 194064, "sqrt": 194064}


def recompute_requests(planner):
    """selective, each recomputable saved activation alone, all of them together, and every chain the integer
    program offers as a unit (its members' outputs)."""
    base = planner.selective_base
    singles = [base.tape[e]["output"] for e in range(len(base.tape)) if base.recomputable(e)]
    units = [sorted(base.tape[e]["output"] for e in unit) for unit in planner.units]
    return ([{"policy": "selective"}] + [{"policy": "manual", "recompute": [uid]} for uid in singles]
            + [{"policy": "manual", "recompute": singles}] + [{"policy": "manual", "recompute": u} for u in units])


def test_every_recompute_plan_is_predicted_step_by_step_with_bitwise_grads(planner):
    requests = recompute_requests(planner)
    assert len(requests) > 3 and planner.units, "the variant offers something to recompute"
    for raw in requests:
        request = validate(raw, planner.base.n_blocks, set(planner.entry_activations))
        schedule = planner.schedule(request)
        executed = np.array([step["live_bytes"] for step in schedule["document"]["steps"]])
        predicted = predict_live_bytes(planner.selective_base, planner.plan(request).recompute)
        assert predicted.tolist() == executed.tolist(), raw
        assert schedule["predicted_peak_bytes"] == schedule["executed_peak_bytes"], raw
        assert schedule["grads_match"] is True, raw


def test_the_optimal_plan_may_recompute_units_and_is_exact(planner):
    for point in planner.pareto():
        schedule = planner.schedule(validate({"policy": "optimal", "budget_bytes": point["budget_bytes"]},
                                             planner.base.n_blocks, set(planner.entry_activations)))
        assert schedule["predicted_peak_bytes"] == schedule["executed_peak_bytes"]
        assert schedule["grads_match"] is True


def test_recomputing_under_a_penalty_keeps_the_copies_for_backward_2():
    """Literal peaks on the preset: backward-1's recorded vjps save the recomputed copies, so they live on into
    backward-2 beside the originals' sources: here recomputation costs memory, as checkpoint regions do."""
    planner = Planner(validate_spec(presets.get("gradient-penalty")))
    peaks = {}
    for uids in ([], [10], [13], [16], [10, 13, 16]):
        request = validate({"policy": "manual", "recompute": uids}, planner.base.n_blocks, set(planner.entry_activations))
        schedule = planner.schedule(request, keep_document=False)
        assert schedule["predicted_peak_bytes"] == schedule["executed_peak_bytes"] and schedule["grads_match"]
        peaks[tuple(uids)] = schedule["executed_peak_bytes"]
    assert peaks == {(): 161296, (10,): 177680, (13,): 177680, (16,): 161296, (10, 13, 16): 194064}


def test_the_document_lists_every_heuristic():
    document = plan_document(validate_spec(presets.get("gradient-penalty")), {"policy": "sqrt"})
    assert [s["policy"] for s in document["schedules"]] == ["none", "every_k", "every_k", "sqrt", "selective"]
    assert all(s["predicted_peak_bytes"] == s["executed_peak_bytes"] and s["grads_match"] for s in document["schedules"])
    assert document["schedule"]["predicted_peak_bytes"] == document["summary"]["peak_bytes"] == 194064
