"""Freeze, detach, no_grad and in-place relu against PyTorch: the same graph (tape entries vs autograd nodes),
the same saved bytes (saved_tensors_hooks' count), the same gradients; and the version error stopping the trace.

Each spec is run by our engine; the torch side replays it op for op (x @ W + b, tanh, relu_, detach, no_grad) on
the very parameter values our model drew.
"""
import contextlib
import json
from pathlib import Path

import numpy as np
import pytest

from backend.models import SpecError, presets, validate_spec
from backend.models.model import Model
from backend.trace.run import record
from backend.trace.document_versions import unpack
from tests.torch_spec import torch_layers
from tests.schemas import assert_matches_schema

FEATURES = {"kind": "features", "size": 3}
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "trace.schema.json").read_text())


def spec_of(layers, **extra):
    return validate_spec({"name": "knobs", "dtype": "float64", "batch": 5, "input": FEATURES, "layers": layers,
                          "loss": {"type": "sum"}, **extra})


LINEAR = {"type": "linear", "out": 6}
CASES = {
    "frozen first linear": [{**LINEAR, "frozen": True}, {"type": "tanh"}, LINEAR, {"type": "tanh"},
                            {"type": "linear", "out": 1}],
    "frozen middle linear": [LINEAR, {"type": "tanh"}, {**LINEAR, "frozen": True}, {"type": "tanh"},
                             {"type": "linear", "out": 1}],
    "frozen last linear": [LINEAR, {"type": "tanh"}, {"type": "linear", "out": 1, "frozen": True}],
    "frozen repeat": [{"type": "repeat", "times": 3, "layers": [{**LINEAR, "frozen": True}, {"type": "tanh"}]},
                      {"type": "linear", "out": 1}],
    "detach": [LINEAR, {"type": "tanh"}, {"type": "detach"}, LINEAR, {"type": "tanh"}, {"type": "linear", "out": 1}],
    "no_grad": [{"type": "no_grad", "layers": [LINEAR, {"type": "tanh"}]}, LINEAR, {"type": "relu", "inplace": True},
                {"type": "linear", "out": 1}],
    "relu_ after a bias add": [LINEAR, {"type": "relu", "inplace": True}, {"type": "linear", "out": 1}],
    "detach inside a residual": [LINEAR, {"type": "residual", "layers": [{"type": "detach"}, LINEAR, {"type": "tanh"}]},
                                 {"type": "linear", "out": 1}],
}


def torch_run(torch, spec, hooks=True):
    """(autograd nodes the loss reaches, saved bytes, {name: grad or None}) of the spec replayed in torch.

    Without `hooks` no saved_tensors_hooks are installed: torch skips its version check on hooked saved tensors."""
    model = Model(spec)
    params = {name: torch.tensor(np.array(p.data), requires_grad=p.requires_grad) for name, p in model.params.items()}
    saved = {}

    def pack(t):
        storage = t.untyped_storage()
        saved[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t) if hooks else contextlib.nullcontext():
        loss = torch_layers(torch, spec["layers"], torch.tensor(np.array(model.input.data)), params).sum()
    nodes, stack = set(), [loss.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in nodes or type(node).__name__ == "AccumulateGrad":
            continue
        nodes.add(node)
        stack.extend(parent for parent, _ in node.next_functions)
    loss.backward()
    return len(nodes), sum(saved.values()), {n: (None if p.grad is None else p.grad.numpy()) for n, p in params.items()}


def reached_entries(document):
    """Tape entries the loss reaches through the inputs (a detach leaves the ones before it recorded but cut off).

    A tensor's producer for a consumer is the latest entry before it that wrote the tensor: the one that made it, or
    an in-place entry on it (relu_: its first input, no output of its own)."""
    tape = [e for e in document["tape"] if e["phase"] == "forward"]
    writers = {}
    for entry in tape:
        target = entry["output"] if entry["output"] is not None else entry["inputs"][0]
        writers.setdefault(target, []).append(entry["index"])

    def producer(uid, consumer):
        return max((w for w in writers.get(uid, ()) if w < consumer), default=None)

    seen, stack = set(), [tape[-1]["index"]]
    while stack:
        index = stack.pop()
        if index is None or index in seen:
            continue
        seen.add(index)
        stack.extend(producer(uid, index) for uid in document["tape"][index]["inputs"])
    return len(seen)


@pytest.mark.parametrize("case", CASES)
def test_the_graph_the_saved_bytes_and_the_grads_are_torchs(case):
    torch = pytest.importorskip("torch")
    spec = spec_of(CASES[case])
    document, grads = record(spec)
    nodes, saved_bytes, torch_grads = torch_run(torch, spec)
    assert reached_entries(document) == nodes
    assert document["summary"]["saved_bytes"] == saved_bytes
    assert set(grads) == set(torch_grads)
    for name, grad in grads.items():
        assert (grad is None) == (torch_grads[name] is None), name
        if grad is not None:
            np.testing.assert_allclose(grad, torch_grads[name], rtol=1e-12, atol=1e-12)


def test_a_frozen_first_linear_records_nothing_and_saves_nothing_for_its_weight():
    plain, _ = record(spec_of([LINEAR, {"type": "tanh"}, {"type": "linear", "out": 1}]))
    frozen, grads = record(spec_of([{**LINEAR, "frozen": True}, {"type": "tanh"}, {"type": "linear", "out": 1}]))
    assert [e["scope"] for e in frozen["tape"] if e["phase"] == "forward"][0] == "layers[2]"
    assert grads["layers[0].weight"] is None and grads["layers[0].bias"] is None
    # The first matmul saved x for dW (and W for dx, which nothing needs: x is the input); tanh's output is saved by
    # tanh either way. Frozen, that entry is gone, and so are x and W from the saved set.
    assert frozen["summary"]["saved_bytes"] < plain["summary"]["saved_bytes"]
    assert frozen["summary"]["peak_bytes"] < plain["summary"]["peak_bytes"]
    unrecorded = [s for s in frozen["steps"] if s.get("recorded") is False]
    assert [s["op"] for s in unrecorded] == ["matmul", "add", "tanh"] and all(s["entry"] is None for s in unrecorded)


def test_no_grad_and_detach_are_reported_as_cuts_with_nothing_recorded_inside():
    document, _ = record(spec_of(CASES["no_grad"][:2] + [{"type": "detach"}, {"type": "linear", "out": 1}]))
    cuts = {cut["path"]: cut for cut in document["cuts"]}
    assert cuts["layers[0]"]["type"] == "no_grad" and cuts["layers[0]"]["entries"] == 0
    assert cuts["layers[0]"]["saved_bytes"] == 0 and cuts["layers[0]"]["tensors"] == 3   # matmul, add, tanh ran
    detached = cuts["layers[2]"]
    assert detached["type"] == "detach" and detached["entries"] == 0
    tensor = next(t for t in document["tensors"] if t["id"] == detached["tensor"])
    assert tensor["produced_by"] is None and any(leaf["tensor"] == tensor["id"] for leaf in document["graph"]["leaves"])


VERSION_ERROR_LAYERS = [LINEAR, {"type": "tanh"}, {"type": "relu", "inplace": True}, {"type": "linear", "out": 1}]


def test_relu_in_place_on_a_saved_output_stops_backward_with_the_engines_text():
    document, grads = record(spec_of(VERSION_ERROR_LAYERS, optimizer={"type": "sgd", "lr": 0.1}))
    error = document["error"]
    last = document["steps"][-1]
    assert error["step"] == last["index"] and last["phase"] == "backward"
    assert document["tape"][error["entry"]]["op"] == "tanh" and error["backward"] == "TanhBackward"
    assert error["message"].startswith("one of the variables needed for gradient computation has been modified by "
                                       "an inplace operation")
    assert "is at version 1; expected version 0 instead" in error["message"]
    assert error["writes"] and error["writes"][0]["scope"] == "layers[2]" and "out of place" in error["fix"]
    assert not any(s["phase"] == "optimizer" for s in document["steps"])
    assert grads["layers[0].weight"] is None and grads["layers[3].weight"] is not None   # relu_'s vjp and W2's ran


def test_torch_raises_the_same_version_error_on_the_same_model():
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*is at version 1; expected version 0"):
        torch_run(torch, spec_of(VERSION_ERROR_LAYERS), hooks=False)


@pytest.mark.parametrize("layers, message", [
    ([{**LINEAR, "frozen": True}, {"type": "linear", "out": 1, "frozen": True}], "leave nothing before the loss"),
    ([LINEAR, {"type": "detach"}], "leave nothing before the loss"),
    ([{"type": "no_grad", "layers": [LINEAR]}], "leave nothing before the loss"),
    ([{"type": "tanh", "frozen": True}, LINEAR], "is not a field here"),
    ([{"type": "tanh", "inplace": True}, LINEAR], "is not a field here"),
    ([{**LINEAR, "frozen": "yes"}], "must be true or false"),
])
def test_knob_mistakes_are_problems_at_their_paths(layers, message):
    with pytest.raises(SpecError) as error:
        spec_of(layers)
    assert any(message in p["message"] for p in error.value.problems), error.value.problems


def test_a_residual_skip_carries_the_gradient_past_a_detached_branch():
    spec = spec_of(CASES["detach inside a residual"])
    assert spec["layers"][1]["layers"][0] == {"type": "detach"}


def test_a_checkpoint_request_on_a_run_whose_backward_stops_is_a_400_naming_the_step(client):
    reply = client.post("/api/trace", json={"spec": presets.get("version-error"), "checkpoint": {"policy": "sqrt"}})
    assert reply.status_code == 400
    problem = reply.get_json()["problems"][0]
    assert problem["path"] == "checkpoint" and "backward stops at step" in problem["message"]


def test_the_version_error_preset_traces_up_to_its_failing_step_over_the_api(client):
    reply = client.post("/api/trace", json={"spec": presets.get("version-error")})
    assert reply.status_code == 200
    document = unpack(reply.get_json())
    assert document["error"]["step"] == len(document["steps"]) - 1 and document["error"]["backward"] == "TanhBackward"
    frozen = unpack(client.post("/api/trace", json={"spec": presets.get("frozen-backbone")}).get_json())
    assert {t["name"] for t in frozen["tensors"] if t.get("frozen")} == {
        "layers[0].weight", "layers[0].bias", "layers[2].weight", "layers[2].bias"}
    assert {t["name"] for t in frozen["tensors"] if t["kind"] == "optimizer"} == {      # Adam's m, v: the head only
        "layers[4].weight.m", "layers[4].weight.v", "layers[4].bias.m", "layers[4].bias.v"}


@pytest.mark.parametrize("case", ["no_grad", "detach", "frozen first linear", "relu_ after a bias add"])
def test_knob_documents_over_the_api_validate_against_the_schema(client, case):
    spec = {"batch": 4, "input": FEATURES, "layers": CASES[case], "loss": {"type": "sum"}}
    reply = client.post("/api/trace", json={"spec": spec})
    assert reply.status_code == 200, reply.get_json()
    document = reply.get_json()
    assert_matches_schema(document, SCHEMA)
    assert document["error"] is None
    assert [cut["type"] for cut in document["cuts"]] == [layer["type"] for layer in CASES[case]
                                                        if layer["type"] in ("detach", "no_grad")]


def test_the_version_error_document_validates_against_the_schema(client):
    assert_matches_schema(client.post("/api/trace", json={"spec": presets.get("version-error")}).get_json(), SCHEMA)
