"""The planner: every policy runs with matching gradients; the chain DP lands where the seed's arithmetic says."""
import math

import pytest

from backend.models import presets, validate_spec
from backend.planner import Planner, PolicyError, validate
from backend.planner.chain import min_peak_segments

# mixed-precision recomputes under autocast; grad-accumulation checkpoints every micro-batch's regions
PRESETS = ["seed-tape", "lab1-mlp", "residual-unit", "deep-mlp", "transformer-tiny", "mixed-precision",
           "grad-accumulation"]
REQUESTS = [{"policy": "none"}, {"policy": "every_k", "k": 1}, {"policy": "sqrt"}, {"policy": "selective"},
            {"policy": "optimal", "budget_bytes": 1}, {"policy": "manual", "recompute": []}]


# Knobs on top of a preset: float16 overflows in lab1-mlp (inf in both runs counts as equal), and accumulate with
# precision checkpoints every micro-batch's regions under autocast.
VARIANTS = {
    "lab1-mlp+float16": ("lab1-mlp", {"dtype": "float32", "precision": {"compute": "float16"}}),
    "residual-unit+accumulate2+bfloat16": ("residual-unit", {"dtype": "float32", "accumulate": 2,
                                                             "precision": {"compute": "bfloat16"}}),
    "transformer-tiny+accumulate2+float16": ("transformer-tiny", {"accumulate": 2, "precision": {"compute": "float16"}}),
}


@pytest.fixture(scope="module", params=PRESETS + list(VARIANTS))
def planner(request):
    name, extra = VARIANTS.get(request.param, (request.param, {}))
    return Planner(validate_spec({**presets.get(name), **extra}))


FAMILIES = ["named", "every_k", "manual", "optimal"]


def requests_for(planner, family):
    """Every policy of `family`: the named requests, every k for every_k, a manual pick of one activation in three,
    and the optimal plan at every budget on the Pareto front."""
    if family == "named":
        return REQUESTS
    if family == "every_k":
        return [{"policy": "every_k", "k": k} for k in range(2, planner.base.n_blocks + 1)]
    if family == "manual":
        base = planner.selective_base
        some_ids = [base.tape[e]["output"] for e in range(len(base.tape)) if base.recomputable(e)][::3]
        return [{"policy": "manual", "recompute": some_ids}]
    return [{"policy": "optimal", "budget_bytes": b} for b in sorted({point["budget_bytes"] for point in planner.pareto()})]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_policy_is_predicted_byte_for_byte_with_bitwise_equal_grads(planner, family):
    for raw in requests_for(planner, family):
        schedule = planner.schedule(validate(raw, planner.base.n_blocks, set(planner.entry_activations)))
        assert schedule["predicted_peak_bytes"] == schedule["executed_peak_bytes"], raw
        assert schedule["grads_match"] is True, raw
        assert set(schedule["stored"]).isdisjoint(schedule["recomputed"])


def test_every_k_lowers_deep_mlps_peak():
    planner = Planner(validate_spec(presets.get("deep-mlp")))
    none = planner.schedule(validate({"policy": "none"}, planner.base.n_blocks, set()))
    sqrt = planner.schedule(validate({"policy": "sqrt"}, planner.base.n_blocks, set()))
    every_4 = planner.schedule(validate({"policy": "every_k", "k": 4}, planner.base.n_blocks, set()))
    assert sqrt["executed_peak_bytes"] < none["executed_peak_bytes"]
    assert every_4["executed_peak_bytes"] < 0.7 * none["executed_peak_bytes"]
    assert 0 < every_4["overhead"] < 1.0


def test_without_rng_replay_dropout_gradients_are_silently_wrong():
    planner = Planner(validate_spec(presets.get("transformer-tiny")))
    schedule = planner.schedule(validate({"policy": "every_k", "k": 1, "preserve_rng_state": False},
                                         planner.base.n_blocks, set()))
    assert schedule["grads_match"] is False
    assert max(schedule["grad_mismatch"].values()) > 0
    replayed = planner.schedule(validate({"policy": "every_k", "k": 1}, planner.base.n_blocks, set()))
    assert replayed["grads_match"] is True and max(replayed["grad_mismatch"].values()) == 0.0


def test_optimal_at_a_heuristics_predicted_peak_needs_no_more_recompute(planner):
    for policy in ("sqrt", "selective", "every_k"):
        heuristic = planner.plan({"policy": policy, "params": {"k": 1}})
        budget = planner.predicted_peak(heuristic)
        chosen = planner.optimal(budget)
        assert planner.predicted_peak(chosen) <= budget
        assert planner.recompute_flops(chosen) <= planner.recompute_flops(heuristic)


def test_uniform_chain_lands_at_sqrt_L():
    for n in (16, 49, 100):
        _peak, segments = min_peak_segments([1.0] * n, [1.0] * n)
        lengths = {end - start for start, end in segments}
        assert max(lengths) == round(math.sqrt(n))


def test_small_boundaries_against_layer_bytes_land_at_k_1():
    _peak, segments = min_peak_segments([38.5] * 12, [1.0] * 12)       # the seed's b = 64 MB, a = 2,464 MB
    assert all(end - start == 1 for start, end in segments)


def test_manual_picks_that_cannot_be_recomputed_are_named():
    planner = Planner(validate_spec(presets.get("transformer-tiny")))
    mask = next(t for t in planner.base_document["tensors"] if t["name"].endswith(".mask"))
    with pytest.raises(PolicyError) as bad:
        planner.plan({"policy": "manual", "params": {"recompute": [mask["id"]]}})
    assert f"tensor {mask['id']} ({mask['name']}) cannot be recomputed" in bad.value.problems[0]["message"]


def test_the_integer_program_is_exact_where_selective_recomputation_matters():
    spec = presets.get("transformer-tiny")
    spec["optimizer"] = {"type": "sgd", "lr": 0.1}        # activations, not Adam's state, set the peak
    planner = Planner(validate_spec(spec))
    none_peak = planner.predicted_peak(planner.plan({"policy": "none", "params": {}}))
    schedule = planner.schedule(validate({"policy": "optimal", "budget_bytes": int(none_peak * 0.9)},
                                         planner.base.n_blocks, set()))
    assert schedule["solver"]["status"] == "optimal" and schedule["feasible"]
    assert schedule["predicted_peak_bytes"] == schedule["executed_peak_bytes"] <= none_peak * 0.9
    assert schedule["grads_match"] and schedule["recompute_entries"]
    selective = planner.schedule(validate({"policy": "selective"}, planner.base.n_blocks, set()))
    assert selective["executed_peak_bytes"] == selective["predicted_peak_bytes"] < none_peak


def test_bad_requests_name_the_field():
    with pytest.raises(PolicyError) as bad:
        validate({"policy": "every_k", "k": 0}, 16, set())
    assert bad.value.problems[0]["path"] == "checkpoint.k" and "from 1 to 16;" in bad.value.problems[0]["message"]
    with pytest.raises(PolicyError):
        validate({"policy": "teleport"}, 16, set())
    with pytest.raises(PolicyError):
        validate({"policy": "manual", "recompute": [10 ** 9]}, 16, {1, 2})


@pytest.mark.parametrize("prefix", [[{"type": "relu"}], [{"type": "dropout", "p": 0.5}, {"type": "tanh"}]])
def test_blocks_before_the_first_parameter_are_never_checkpointed(prefix):
    """They record nothing on the tape (the input needs no grad), so there is nothing to recompute; they once
    sent the predictor looking for steps that do not exist (a KeyError, a 500 through the API)."""
    spec = validate_spec({"input": {"kind": "features", "size": 2}, "batch": 2,
                          "layers": [*prefix, {"type": "linear", "out": 3}, {"type": "tanh"}, {"type": "linear", "out": 1}]})
    planner = Planner(spec)
    n = planner.base.n_blocks
    for raw in [{"policy": "sqrt"}, *({"policy": "every_k", "k": k} for k in range(1, n + 1))]:
        schedule = planner.schedule(validate(raw, n, set(planner.entry_activations)))
        assert all(block >= len(prefix) for region in schedule["block_regions"] for block in region), raw
        assert schedule["predicted_peak_bytes"] == schedule["executed_peak_bytes"], raw
        assert schedule["grads_match"] is True, raw
    assert planner.pareto()


def test_an_output_an_in_place_op_overwrites_is_never_recomputed():
    """gelu's output is then relu_'d in place: recomputing gelu gives the value before the write, and the next
    linear's weight gradient came out wrong under selective and optimal (found by a PyTorch-oracle fuzz)."""
    spec = validate_spec({"dtype": "float32", "seed": 225, "batch": 4, "input": {"kind": "features", "size": 3},
                          "loss": {"type": "sum"}, "layers": [{"type": "linear", "out": 4}, {"type": "gelu"},
                                                              {"type": "relu", "inplace": True}, {"type": "linear", "out": 2}]})
    planner = Planner(spec)
    gelu = next(e for e in planner.base_document["tape"] if e["op"] == "gelu")
    assert gelu["recompute"]["ok"] is False
    assert gelu["recompute"]["reason"].startswith("an in-place op writes into it at step 3")
    for raw in ({"policy": "selective"}, {"policy": "optimal", "budget_bytes": 1}):
        schedule = planner.schedule(validate(raw, planner.base.n_blocks, set(planner.entry_activations)))
        assert gelu["index"] not in schedule["recompute_entries"] and schedule["grads_match"] is True, raw
    with pytest.raises(PolicyError) as bad:
        planner.plan({"policy": "manual", "params": {"recompute": [gelu["output"]]}})
    assert "an in-place op writes into it" in bad.value.problems[0]["message"]


IN_PLACE_AT_A_BLOCKS_START = {
    "relu_ as a block": [{"type": "linear", "out": 3}, {"type": "relu", "inplace": True}, {"type": "linear", "out": 3},
                         {"type": "linear", "out": 1}],
    "relu_ first in a residual": [{"type": "linear", "out": 3}, {"type": "gelu"}, {"type": "residual", "layers": [
        {"type": "relu", "inplace": True}, {"type": "linear", "out": 3}]}, {"type": "linear", "out": 1}],
}


@pytest.mark.parametrize("name", list(IN_PLACE_AT_A_BLOCKS_START))
def test_a_block_that_writes_into_its_input_in_place_is_never_a_region(name):
    """Checkpointed, its recompute would start from what relu_ left in the input: every_k 1 gave grads_match false
    (and a wrong predicted peak) on both models (a review of the fuzz's findings)."""
    planner = Planner(validate_spec({"dtype": "float32", "batch": 4, "input": {"kind": "features", "size": 3},
                                     "layers": IN_PLACE_AT_A_BLOCKS_START[name], "loss": {"type": "sum"}}))
    n = planner.base.n_blocks
    written = planner._overwriting_blocks()
    assert written
    for raw in [{"policy": "sqrt"}, {"policy": "optimal", "budget_bytes": 1}, *({"policy": "every_k", "k": k} for k in range(1, n + 1))]:
        schedule = planner.schedule(validate(raw, n, set(planner.entry_activations)))
        assert not written & {b for region in schedule["block_regions"] for b in region}, raw
        assert schedule["predicted_peak_bytes"] == schedule["executed_peak_bytes"] and schedule["grads_match"], raw


CUT_MODELS = {
    "detach": [{"type": "linear", "out": 2}, {"type": "detach"}, {"type": "linear", "out": 2}],
    "no_grad": [{"type": "linear", "out": 3}, {"type": "tanh"}, {"type": "no_grad", "layers": [{"type": "linear", "out": 3}]},
                {"type": "linear", "out": 3}, {"type": "tanh"}, {"type": "linear", "out": 1}],
    "residual around a detach": [{"type": "linear", "out": 3}, {"type": "residual", "layers": [
        {"type": "tanh"}, {"type": "linear", "out": 3}, {"type": "detach"}]}, {"type": "tanh"}, {"type": "linear", "out": 1}],
    # the second no_grad cuts the first iteration's linear off; each iteration opens with an op off the tape
    "no_grad first in a repeat": [{"type": "linear", "out": 3}, {"type": "repeat", "times": 2, "layers": [
        {"type": "no_grad", "layers": [{"type": "sigmoid"}]}, {"type": "linear", "out": 3}]},
        {"type": "linear", "out": 3}, {"type": "linear", "out": 1}],
}


@pytest.mark.parametrize("name", list(CUT_MODELS))
def test_every_policy_plans_a_model_cut_by_a_detach_or_no_grad(name):
    """The ops before a cut are recorded but no gradient reaches them: no region holds them, nothing they save is
    recomputed, and their saves go when their graph does. Every policy once raised a KeyError here (a 500)."""
    planner = Planner(validate_spec({"dtype": "float32", "batch": 2, "input": {"kind": "features", "size": 2},
                                     "layers": CUT_MODELS[name], "loss": {"type": "sum"}}))
    n = planner.base.n_blocks
    reached = {planner.base.entry_block[e] for e in planner.base.first_backward_step}
    for raw in [{"policy": "sqrt"}, {"policy": "selective"}, {"policy": "optimal", "budget_bytes": 1},
                *({"policy": "every_k", "k": k} for k in range(1, n + 1))]:
        schedule = planner.schedule(validate(raw, n, set(planner.entry_activations)))
        assert schedule["predicted_peak_bytes"] == schedule["executed_peak_bytes"], raw
        assert schedule["grads_match"] is True, raw
        assert {b for region in schedule["block_regions"] for b in region} <= reached, raw
    tape = planner.base_document["tape"]
    saved_cut_off = {uid for e in tape if e["phase"] == "forward" and e["index"] not in planner.base.first_backward_step
                     for uid in e["saved"]}
    producers = [e for e in tape if e["phase"] == "forward" and e["output"] in saved_cut_off]
    assert not any(e["recompute"]["ok"] for e in producers)
    if name in ("no_grad", "residual around a detach"):     # detach's cut-off linear saves only x and its weight
        assert any(e["recompute"]["reason"].startswith("no gradient reaches entry") for e in producers)
