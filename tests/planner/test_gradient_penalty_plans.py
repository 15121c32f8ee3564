"""Checkpoint regions under a gradient penalty (a recorded backward, then backward-2 through it): every region plan
is predicted byte for byte with bitwise gradients; selective recomputation is refused with its reason."""
import pytest

from backend.models import presets, validate_spec
from backend.planner import Planner, PolicyError, plan_document, validate

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


@pytest.mark.parametrize("raw", [{"policy": "selective"}, {"policy": "manual", "recompute": []}])
def test_selective_recomputation_is_refused_saying_why(raw):
    planner = Planner(validate_spec(presets.get("gradient-penalty")))
    with pytest.raises(PolicyError) as refused:
        planner.plan(validate(raw, planner.base.n_blocks, set(planner.entry_activations)))
    (problem,) = refused.value.problems
    assert problem["path"] == "checkpoint.policy"
    assert "loss.gradient_penalty" in problem["message"] and "second backward" in problem["message"]
    assert planner.units == []              # the integer program offers no recompute units either


def test_the_document_lists_the_region_heuristics_only():
    document = plan_document(validate_spec(presets.get("gradient-penalty")), {"policy": "sqrt"})
    assert [s["policy"] for s in document["schedules"]] == ["none", "every_k", "every_k", "sqrt"]
    assert all(s["predicted_peak_bytes"] == s["executed_peak_bytes"] and s["grads_match"] for s in document["schedules"])
    assert document["schedule"]["predicted_peak_bytes"] == document["summary"]["peak_bytes"] == 194064
