"""POST /api/levers: every lever executed by the engine; its peak is what /api/trace of its change gives."""
import pytest

from backend.models import presets


@pytest.fixture(scope="module")
def app_client(tmp_path_factory):
    from app import create_app
    path = tmp_path_factory.mktemp("levers") / "tapescope.sqlite"
    return create_app({"TESTING": True, "DATABASE_URL": f"sqlite:///{path}"}).test_client()


def levers_of(client, preset, checkpoint=None):
    body = {"spec": presets.get(preset)}
    if checkpoint is not None:
        body["checkpoint"] = checkpoint
    reply = client.post("/api/levers", json=body)
    assert reply.status_code == 200, reply.get_json()
    return reply.get_json()


def traced_peak(client, spec, checkpoint=None):
    body = {"spec": spec, **({"checkpoint": checkpoint} if checkpoint else {})}
    reply = client.post("/api/trace", json=body)
    assert reply.status_code == 200
    return reply.get_json()["summary"]["peak_bytes"]


@pytest.fixture(scope="module")
def deep_mlp(app_client):
    return levers_of(app_client, "deep-mlp")


def by_name(report):
    return {lever["lever"]: lever for lever in report["levers"]}


def test_every_lever_peak_is_what_a_separate_trace_of_its_change_gives(app_client, deep_mlp):
    spec = presets.get("deep-mlp")
    assert deep_mlp["current"]["peak_bytes"] == traced_peak(app_client, spec)
    for lever in deep_mlp["levers"]:
        if "checkpoint" in lever:
            assert lever["peak_bytes"] == traced_peak(app_client, spec, lever["checkpoint"]), lever["lever"]
        else:
            assert lever["peak_bytes"] == traced_peak(app_client, lever["spec"]), lever["lever"]
        assert lever["delta_bytes"] == lever["peak_bytes"] - deep_mlp["current"]["peak_bytes"]


def test_deep_mlp_levers_are_ranked_and_the_ones_that_raise_the_peak_say_why(deep_mlp):
    levers = by_name(deep_mlp)
    assert {"checkpoint: sqrt", "checkpoint: every_k (k=1)", "half the batch", "float16 instead of float32"} <= set(levers)
    deltas = [lever["delta_bytes"] for lever in deep_mlp["levers"]]
    lowering = [d for d in deltas if d < 0]
    assert deltas[:len(lowering)] == lowering                  # the levers that lower the peak come first
    sqrt = levers["checkpoint: sqrt"]
    assert sqrt["delta_bytes"] < 0 and sqrt["extra_flops"] > 0 and sqrt["grads_match"] is True
    every_block = levers["checkpoint: every_k (k=1)"]
    assert every_block["delta_bytes"] > 0 and "reason" in every_block
    assert every_block["reason"].startswith("The peak is ")
    assert levers["half the batch"]["grads_match"] is None     # another batch: gradients are another quantity
    assert levers["half the batch"]["spec"]["batch"] == 128


def test_transformer_lists_sgd_instead_of_adam_with_its_traced_peak(app_client):
    report = levers_of(app_client, "transformer-tiny")
    assert "optimizer step" in report["current"]["verdict"]
    sgd = by_name(report)["SGD instead of Adam"]
    assert sgd["spec"]["optimizer"]["type"] == "sgd" and sgd["grads_match"] is True
    assert sgd["peak_bytes"] == traced_peak(app_client, sgd["spec"]) < report["current"]["peak_bytes"]
    assert {"half the sequence", "efficient attention"} <= set(by_name(report))


def test_levers_under_a_checkpoint_compare_against_that_run(app_client):
    report = levers_of(app_client, "lab1-mlp", {"policy": "every_k", "k": 1})
    levers = by_name(report)
    assert "checkpoint: every_k (k=1)" not in levers and "checkpoint: none" in levers
    assert report["current"]["peak_bytes"] == traced_peak(app_client, presets.get("lab1-mlp"), {"policy": "every_k", "k": 1})
    assert levers["checkpoint: none"]["delta_bytes"] < 0 and levers["checkpoint: none"]["extra_flops"] < 0


@pytest.mark.parametrize("body,status,path", [
    ({}, 400, "spec"),
    ({"spec": {"layers": "nope"}}, 400, "layers"),
    ({"spec": presets.get("lab1-mlp"), "checkpoint": {"policy": "sometimes"}}, 400, "checkpoint.policy"),
    ({"spec": {**presets.get("lab1-mlp"), "batch": 10**6}}, 400, "batch"),
])
def test_bad_requests_are_4xx_naming_the_field(app_client, body, status, path):
    reply = app_client.post("/api/levers", json=body)
    assert reply.status_code == status
    assert any(p["path"].startswith(path) for p in reply.get_json()["problems"])


def test_the_frontiers_optimal_schedules_are_levers_at_the_budgets_the_chart_draws(app_client, deep_mlp):
    planned = app_client.post("/api/trace", json={"spec": presets.get("deep-mlp"), "checkpoint": {"policy": "sqrt"}})
    frontier = {point["budget_bytes"]: point for point in planned.get_json()["pareto"]}
    optimal = [lever for lever in deep_mlp["levers"] if lever.get("checkpoint", {}).get("policy") == "optimal"]
    assert 1 <= len(optimal) <= 3
    sqrt = by_name(deep_mlp)["checkpoint: sqrt"]
    for lever in optimal:
        budget = lever["checkpoint"]["budget_bytes"]
        assert budget in frontier, lever["lever"]
        assert lever["peak_bytes"] <= budget and lever["delta_bytes"] < 0 and lever["grads_match"] is True
        assert lever["lever"].startswith("checkpoint: optimal ≤ ")
    # what the chart showed a learner: a frontier point that saves bytes for far less recompute than sqrt
    assert min(lever["extra_flops"] for lever in optimal) < sqrt["extra_flops"]


@pytest.mark.parametrize("preset, refused", [("mixed-precision", "float16 instead of float32"),
                                             ("frozen-backbone", "freeze the last half")])
def test_an_edit_the_model_refuses_is_left_out_rather_than_refusing_the_levers(app_client, preset, refused):
    report = levers_of(app_client, preset)
    assert report["levers"] and refused not in by_name(report)
