"""POST /api/modes and POST /api/matrix-chain: sweeps counted, FLOPs from the engine's counters, both modes' Jacobians
equal, the JVP sweep stepped over the trace's entries, and every bad or oversized request refused by name."""
import pytest

from backend.driver.work import WORK_BUDGET_US
from backend.models import presets
from backend.trace.document_versions import unpack


@pytest.fixture(scope="module")
def app_client(tmp_path_factory):
    from app import create_app
    path = tmp_path_factory.mktemp("modes") / "tapescope.sqlite"
    return create_app({"TESTING": True, "DATABASE_URL": f"sqlite:///{path}"}).test_client()


def post_ok(client, url, body):
    reply = client.post(url, json=body)
    assert reply.status_code == 200, reply.get_json()
    return reply.get_json()


@pytest.fixture(scope="module", params=["seed-tape", "lab1-mlp", "residual-unit"])
def traced(request, app_client):
    spec = presets.get(request.param)
    return (spec, post_ok(app_client, "/api/modes", {"spec": spec}), unpack(post_ok(app_client, "/api/trace", {"spec": spec})))


def test_sweep_counts_are_the_models_input_and_output_sizes(traced):
    spec, report, trace = traced
    inputs = spec["batch"] * spec["input"]["size"]
    logits = trace["tensors"][trace["tape"][-2]["output"]]["shape"]       # the last entry before the loss
    outputs = 1
    for n in logits:
        outputs *= n
    assert report["input"]["elements"] == inputs
    loss, logit = report["jacobians"]["loss"], report["jacobians"]["logits"]
    assert (loss["forward"]["sweeps"], loss["reverse"]["sweeps"]) == (inputs, 1)
    assert (logit["forward"]["sweeps"], logit["reverse"]["sweeps"]) == (inputs, outputs)


def test_flops_are_the_engines_counters(traced):
    """The loss's forward is the trace's forward (its registry FLOPs); a JVP sweep is it plus one tangent product per
    input carrying a tangent; totals are n JVP sweeps, or one forward plus m VJP sweeps."""
    spec, report, trace = traced
    forward_flops = trace["summary"]["forward_flops"]
    loss = report["jacobians"]["loss"]
    assert loss["forward"]["sweep_primal_flops"] == forward_flops
    assert loss["reverse"]["forward_flops"] == forward_flops
    assert loss["forward"]["sweep_flops"] == forward_flops + loss["forward"]["sweep_tangent_flops"]
    for jacobian in report["jacobians"].values():
        forward, reverse = jacobian["forward"], jacobian["reverse"]
        assert forward["total_flops"] == forward["sweeps"] * forward["sweep_flops"]
        assert reverse["total_flops"] == reverse["forward_flops"] + reverse["sweeps"] * reverse["sweep_flops"]
        assert forward["saved_bytes"] == 0 and reverse["saved_bytes"] > 0
        assert reverse["sweep_peak_bytes"] >= reverse["saved_bytes"]      # a VJP sweep reads what the tape saved


def test_each_derivative_product_costs_its_ops_forward_along_a_chain(app_client):
    """seed-tape is a chain from x (every op has one input on x's path): tangents and adjoints cost the forward."""
    report = post_ok(app_client, "/api/modes", {"spec": presets.get("seed-tape")})
    loss = report["jacobians"]["loss"]
    assert loss["forward"]["sweep_tangent_flops"] == loss["forward"]["sweep_primal_flops"]
    assert loss["reverse"]["sweep_flops"] == loss["reverse"]["forward_flops"]


def test_forward_and_reverse_jacobians_agree(traced):
    _spec, report, _trace = traced
    for jacobian in report["jacobians"].values():
        assert jacobian["max_abs_difference"] < 1e-5


def test_the_jvp_sweep_steps_over_the_traces_forward_entries(traced):
    _spec, report, trace = traced
    steps = report["jvp_sweep"]["steps"]
    forward = [e for e in trace["tape"] if e["phase"] == "forward"]
    assert [s["entry"] for s in steps] == [e["index"] for e in forward]
    assert [s["op"] for s in steps] == [e["op"] for e in forward]
    assert [s["flops"] for s in steps] == [e["flops"] for e in forward]
    for step in steps:
        assert step["tangent"] is not None and {"norm", "min", "max"} <= set(step["tangent"])
    loss_tangent = report["jvp_sweep"]["loss"]["tangent"]
    assert steps[-1]["tangent"]["min"] == pytest.approx(loss_tangent, rel=1e-5)


def test_a_direction_picks_the_input_element(app_client):
    spec = presets.get("lab1-mlp")              # random biases: each x_i's gates differ, so does dL/dx_i
    at_0 = post_ok(app_client, "/api/modes", {"spec": spec})["jvp_sweep"]
    at_5 = post_ok(app_client, "/api/modes", {"spec": spec, "direction": {"element": 5}})["jvp_sweep"]
    assert at_5["direction"]["index"] == [5, 0]
    assert at_0["loss"]["tangent"] != at_5["loss"]["tangent"]


@pytest.mark.parametrize("direction", [{"element": 64}, {"element": -1}, {"element": "0"}, {"element": True}, [0]])
def test_a_bad_direction_is_400_naming_the_field(app_client, direction):
    reply = app_client.post("/api/modes", json={"spec": presets.get("seed-tape"), "direction": direction})
    assert reply.status_code == 400
    assert reply.get_json()["problems"][0]["path"] == "direction.element"


def test_missing_or_bad_spec_is_400(app_client):
    assert app_client.post("/api/modes", json={}).get_json()["problems"][0]["path"] == "spec"
    reply = app_client.post("/api/modes", json={"spec": {"batch": 0}})
    assert reply.status_code == 400 and reply.get_json()["problems"][0]["path"] == "batch"


def test_a_model_whose_sweeps_are_over_the_budget_runs_on_a_named_slice(app_client):
    """deep-mlp has 4,096 input elements: 8,192 sweeps priced as traces are far over the budget, so the modes run
    on the largest sub-batch that fits, and say so; the figures are that slice's, executed."""
    spec = presets.get("deep-mlp")
    reply = app_client.post("/api/modes", json={"spec": spec})
    assert reply.status_code == 200, reply.get_json()
    body = reply.get_json()
    sliced = body["slice"]
    assert sliced["of"] == spec["batch"] and 1 <= sliced["batch"] < spec["batch"]
    assert f"the first {sliced['batch']} of its {spec['batch']} rows" in sliced["reason"]
    assert body["input"]["shape"][0] == sliced["batch"]                  # what ran is the slice
    jacobian = body["jacobians"]["loss"]
    assert jacobian["input_elements"] == body["input"]["elements"] == sliced["batch"] * body["input"]["shape"][1]
    assert jacobian["forward"]["sweeps"] == jacobian["input_elements"]


def test_every_preset_but_version_error_shows_executed_modes(app_client):
    for preset_id in presets.PRESETS:
        reply = app_client.post("/api/modes", json={"spec": presets.get(preset_id)})
        if preset_id == "version-error":
            assert reply.status_code == 400 and "version error" in reply.get_json()["error"]
            continue
        assert reply.status_code == 200, (preset_id, reply.get_json())
        assert reply.get_json()["jacobians"]["logits"]["reverse"]["sweeps"] >= 1


def test_a_model_whose_single_row_is_over_the_budget_is_413_work(app_client):
    spec = {**presets.get("deep-mlp"), "batch": 1, "input": {"kind": "features", "size": 4096}}
    reply = app_client.post("/api/modes", json={"spec": spec})
    assert reply.status_code == 413
    body = reply.get_json()
    assert body["cap"] == "work" and body["limit"] == WORK_BUDGET_US and body["requested"] > WORK_BUDGET_US


# ------------------------------ the matrix chain ------------------------------

def test_the_default_chain_is_the_seeds_lesson(app_client):
    reply = post_ok(app_client, "/api/matrix-chain", {"widths": [4096, 4096, 4096, 1]})
    assert reply["analytic"]["reverse"] == 33_554_432
    assert reply["analytic"]["forward"] == 68_736_253_952
    assert reply["analytic"]["reverse_grouping"] == "(A3·A2)·A1"


def test_the_executed_chain_measures_what_the_analytic_count_says_at_small_widths(app_client):
    reply = post_ok(app_client, "/api/matrix-chain", {"widths": [4096, 4096, 4096, 1]})["executed"]
    assert reply["widths"] == [64, 64, 64, 1]
    assert reply["reverse"]["multiply_adds"] == 64 * 64 * 1 + 64 * 64 * 1           # (A3·A2)·A1: rows only
    assert reply["forward"]["multiply_adds"] == 64 * 64 * 64 + 1 * 64 * 64          # A3·(A2·A1): a 64×64 block
    for order in ("forward", "reverse"):
        assert reply[order]["multiply_adds"] == reply[order]["analytic_multiply_adds"]
        assert reply[order]["flops"] == 2 * reply[order]["multiply_adds"]
    assert reply["max_abs_difference"] < 1e-9


def test_forward_wins_with_few_inputs_and_many_outputs(app_client):
    reply = post_ok(app_client, "/api/matrix-chain", {"widths": [1, 4096, 4096, 4096]})
    assert reply["analytic"]["cheaper"] == "forward"
    assert reply["executed"]["forward"]["multiply_adds"] < reply["executed"]["reverse"]["multiply_adds"]


@pytest.mark.parametrize("widths, path", [
    (None, "widths"), ([4096, 1], "widths"), ([1] * 7, "widths"), ([4096, 0, 4096, 1], "widths[1]"),
    ([4096, 65_537, 4096, 1], "widths[1]"), ([4096, 2.5, 4096, 1], "widths[1]"), ([4096, "8", 4096, 1], "widths[1]"),
])
def test_bad_widths_are_400_naming_the_width(app_client, widths, path):
    reply = app_client.post("/api/matrix-chain", json={"widths": widths})
    assert reply.status_code == 400
    assert reply.get_json()["problems"][0]["path"] == path
