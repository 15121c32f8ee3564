"""A gradient-penalty spec end to end: validation with a path per problem, the price, the planned checkpoint, and
its trace through the API (phases forward, backward recorded, backward-2; the recorded entries and what they save;
the peak against the same model without the penalty).

The peak ratio: the seed says WGAN-GP "pays ~2× peak". With create_graph the forward's saved tensors stay (the
second sweep reads them again) and on top of them sit what the recorded vjps saved. Here a recorded tanh vjp is
`g · (1 − y·y)`, which saves both g and 1 − y² (PyTorch's fused TanhBackward saves g and y, and y is already
held), and a recorded linear saves the adjoint for both of its products, so the extra is about one to two
activations per layer: the preset lands near 1.8× and a deep tanh stack higher (its recorded tanh saves more).
The test states the ratio's parts, not a number: the extra bytes at the peak are the saved-for-backward-2 bytes
(plus the gradients the penalty's sweep adds), and the ratio is reported.
"""
import copy

import pytest

from backend.driver import trace_spec, work
from backend.models import CapError, SpecError, presets, validate_spec
from backend.models.spec import plan
from backend.trace.document_versions import unpack

GP = "gradient-penalty"


def problems_of(spec):
    with pytest.raises(SpecError) as error:
        validate_spec(spec)
    return {p["path"]: p["message"] for p in error.value.problems}


def without_penalty(spec):
    plain = copy.deepcopy(spec)
    del plain["loss"]["gradient_penalty"]
    return plain


def test_the_penalty_is_validated_with_a_path_per_problem_and_capped():
    spec = presets.get(GP)
    assert validate_spec(spec)["loss"]["gradient_penalty"] == {"weight": 10.0}
    spec["loss"]["gradient_penalty"] = {"weight": 5000, "power": 2}
    found = problems_of(spec)
    assert found["loss.gradient_penalty.weight"].startswith("must be a number from 0 to 1,000")
    assert "loss.gradient_penalty.power" in found
    default = presets.get(GP)
    default["loss"]["gradient_penalty"] = {}
    assert validate_spec(default)["loss"]["gradient_penalty"]["weight"] == 10.0


def test_a_penalty_refuses_what_cannot_be_differentiated_twice():
    spec = presets.get(GP)
    spec["layers"].insert(2, {"type": "layernorm"})
    spec["loss"] = {"type": "cross_entropy", "gradient_penalty": {"weight": 1.0}}
    found = problems_of(spec)
    assert "layernorm cannot be differentiated twice" in found["layers[2].type"]
    assert "cross_entropy cannot carry a gradient penalty" in found["loss.type"]
    tokens = presets.get("transformer-tiny")
    tokens["loss"]["gradient_penalty"] = {"weight": 1.0}
    assert "needs a features input" in problems_of(tokens)["loss.gradient_penalty"]


def penalized(layers):
    return {"dtype": "float32", "batch": 2, "input": {"kind": "features", "size": 2}, "layers": layers,
            "loss": {"type": "sum", "gradient_penalty": {"weight": 0.5}}}


@pytest.mark.parametrize("cut", [{"type": "detach"}, {"type": "no_grad", "layers": [{"type": "tanh"}]}])
def test_a_penalty_refuses_a_model_that_cuts_the_input_off_the_loss(cut):
    """∂loss/∂x of a loss that does not depend on x: the engine raised torch's "appears to not have been used in
    the graph" (a 500) on a spec that had passed validation. A cut inside a residual is fine: the skip carries x."""
    found = problems_of(penalized([{"type": "tanh"}, cut, {"type": "linear", "out": 3}]))
    assert found["loss.gradient_penalty"] == (f"differentiates the loss with respect to the input, but layers[1] "
                                              f"({cut['type']}) cuts the input off from the loss: remove that layer or "
                                              "loss.gradient_penalty")
    validate_spec(penalized([{"type": "residual", "layers": [{"type": "tanh"}, cut]}, {"type": "linear", "out": 3}]))


@pytest.mark.parametrize("first", [[], [{"type": "residual", "layers": []}]])
def test_a_penalty_refuses_relu_in_place_on_the_input(first):
    """torch refuses an in-place op on a leaf that requires grad, and the penalty makes the input one (a 500 once)."""
    layers = [{"type": "relu", "inplace": True}, {"type": "linear", "out": 2}]
    if first:                           # the same relu_, first inside a residual: it still writes into x
        layers = [{"type": "residual", "layers": [layers[0]]}, layers[1]]
    found = problems_of(penalized(layers))
    path = "layers[0].layers[0].inplace" if first else "layers[0].inplace"
    assert found[path].startswith("relu_ here would overwrite the model's input, which loss.gradient_penalty")
    validate_spec(penalized([{"type": "tanh"}, {"type": "relu", "inplace": True}, {"type": "linear", "out": 2}]))


def test_the_tally_and_the_work_price_count_the_extra_sweep():
    spec = validate_spec(presets.get(GP))
    plain = validate_spec(without_penalty(spec))
    assert plan(spec).entries >= 4 * plan(plain).entries
    assert plan(spec).activation_bytes >= 3 * plan(plain).activation_bytes
    assert work.estimate_work_us(spec) > 2 * work.estimate_work_us(plain)


def test_the_work_cap_refuses_a_penalty_whose_model_alone_fits(monkeypatch):
    spec = validate_spec(presets.get(GP))
    plain = validate_spec(without_penalty(spec))
    monkeypatch.setattr(work, "WORK_BUDGET_US", 2 * work.estimate_work_us(plain))   # a budget between the two
    work.check_work(plain)
    with pytest.raises(CapError) as refused:
        work.check_work(spec)
    assert refused.value.cap == "work"


def test_checkpoint_regions_and_selective_recomputation_plan(client):
    response = client.post("/api/trace", json={"spec": presets.get(GP), "checkpoint": {"policy": "sqrt"}})
    assert response.status_code == 200, response.get_json()
    schedule = unpack(response.get_json())["schedule"]
    assert schedule["predicted_peak_bytes"] == schedule["executed_peak_bytes"] == 194064
    assert schedule["grads_match"] is True
    manual = client.post("/api/trace", json={"spec": presets.get(GP), "checkpoint": {"policy": "manual", "recompute": [10]}})
    assert manual.status_code == 200, manual.get_json()
    schedule = unpack(manual.get_json())["schedule"]
    assert schedule["predicted_peak_bytes"] == schedule["executed_peak_bytes"] == 177680
    assert schedule["grads_match"] is True and schedule["recomputed"] == [10]
    levers = client.post("/api/levers", json={"spec": presets.get(GP)})
    assert levers.status_code == 200, levers.get_json()


@pytest.fixture(scope="module")
def documents():
    spec = presets.get(GP)
    return trace_spec(spec, measure=False), trace_spec(without_penalty(spec), measure=False)


def test_the_trace_has_forward_backward_recorded_and_backward_2(client):
    document = unpack(client.post("/api/trace", json={"spec": presets.get(GP)}).get_json())
    phases = [step["phase"] for step in document["steps"]]
    order = [p for i, p in enumerate(phases) if i == 0 or phases[i - 1] != p]
    assert order == ["forward", "backward", "backward-2", "optimizer"]
    recorded = [e for e in document["tape"] if e.get("recorded_in") == "backward"]
    assert recorded and len(recorded) == document["summary"]["recorded_backward"]["entries"]
    for entry in recorded:
        assert entry["phase"] == "backward" and entry["scope"].startswith("backward (recorded)")
        assert document["tape"][entry["recorded_for"]]["phase"] == "forward"     # a forward entry's vjp made it
    swept_in_2 = {s["entry"] for s in document["steps"] if s["phase"] == "backward-2"}
    assert {e["index"] for e in recorded} <= swept_in_2              # the second sweep runs the second tape


def test_the_storages_saved_for_backward_2_are_the_recorded_entries_saves(documents):
    document, _ = documents
    tensors = document["tensors"]
    recorded = {e["index"] for e in document["tape"] if e.get("recorded_in") == "backward"}
    marked = {s["id"] for s in document["storages"] if s.get("saved_for_backward_2")}
    expected = {t["storage"] for t in tensors if t["produced_by"] in recorded and not t.get("view")} & \
               {t["storage"] for t in tensors if t["saved_by"]}
    assert marked == expected and marked
    steps = document["steps"]
    backward_2 = [s["index"] for s in steps if s["phase"] == "backward-2"]
    storages = {s["id"]: s for s in document["storages"]}
    for step in steps:
        alive = sum(storages[i]["nbytes"] for i in marked
                    if storages[i]["born"] <= step["index"] and (storages[i]["freed"] is None or step["index"] <= storages[i]["freed"]))
        assert step["recorded_backward_bytes"] == alive
    # freed only when backward-2 has read them: nothing saved for it survives the second sweep
    assert all(storages[i]["freed"] is not None and storages[i]["freed"] <= backward_2[-1] for i in marked)


def test_the_peak_against_the_same_model_without_the_penalty(documents, capsys):
    penalized, plain = documents
    peak, base = penalized["summary"]["peak"], plain["summary"]["peak_bytes"]
    ratio = penalized["summary"]["peak_bytes"] / base
    with capsys.disabled():
        print(f"\ngradient-penalty peak {penalized['summary']['peak_bytes']:,} B vs {base:,} B without: {ratio:.2f}x "
              f"({peak['recorded_backward_bytes']:,} B of it saved for backward-2)")
    assert peak["phase"] == "backward-2"
    assert 1.3 < ratio < 4                                         # the seed's ~2x, explained in the docstring
    extra = penalized["summary"]["peak_bytes"] - base
    grads_extra = peak["by_kind"]["grad"] - plain["summary"]["by_kind_at_peak"]["grad"]
    # what the penalty adds at its peak is mostly the first backward's saved intermediates
    assert peak["recorded_backward_bytes"] >= 0.5 * extra
    assert peak["recorded_backward_bytes"] <= extra + max(grads_extra, 0) + plain["summary"]["by_kind_at_peak"]["activation"]
    assert "the first backward's intermediates saved for the second" in peak["verdict"]
