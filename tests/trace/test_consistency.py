"""Every preset's trace is consistent with itself: live bytes, peak, saved-tensor lifetimes, grads."""
import pytest

from backend.models import presets
from backend.driver import trace_spec
from tests.gradient_names import misnamed_gradients

PRESETS = list(presets.PRESETS)
STOPPED = {"version-error"}       # its backward stops at TanhBackward by design: a finished sweep's invariants do not apply


@pytest.fixture(scope="module", params=PRESETS)
def document(request):
    return trace_spec(presets.get(request.param), measure=False)


@pytest.fixture(scope="module", params=[p for p in PRESETS if p not in STOPPED])
def finished(request):
    """The document of a preset whose backward runs to the end."""
    return trace_spec(presets.get(request.param), measure=False)


def test_exactly_the_presets_named_stopped_stop(document):
    assert (document["error"] is not None) == (document["spec"]["name"] in STOPPED)


def alive(record, step):
    return record["born"] <= step and (record["freed"] is None or step <= record["freed"])


def test_live_bytes_are_the_storages_alive_at_each_step(document):
    for step in document["steps"]:
        alive_storages = [s for s in document["storages"] if alive(s, step["index"])]
        assert step["live_bytes"] == sum(s["nbytes"] for s in alive_storages)
        for kind, nbytes in step["by_kind"].items():
            assert nbytes == sum(s["nbytes"] for s in alive_storages if s["kind"] == kind)


def test_views_are_not_counted_twice(document):
    storage_bytes = {s["id"]: s["nbytes"] for s in document["storages"]}
    views = [t for t in document["tensors"] if t.get("view")]
    for view in views:
        assert view["storage"] in storage_bytes
    assert len({t["storage"] for t in document["tensors"]}) == len(document["storages"])


def test_peak_is_the_maximum(document):
    summary = document["summary"]
    live = [s["live_bytes"] for s in document["steps"]]
    assert summary["peak_bytes"] == max(live)
    assert live[summary["peak_step"]] == summary["peak_bytes"]


def test_saved_activations_are_born_in_forward_and_freed_by_the_last_backward_step_that_reads_them(finished):
    """With a gradient penalty, also in the first backward: what its recorded vjps (or the penalty) saved."""
    document = finished
    steps = document["steps"]
    backward_step_of = {item["entry"]: item["step"] for item in document["sweep"]}    # the last sweep's, if two
    for tensor in document["tensors"]:
        if not tensor["saved_by"] or tensor["kind"] != "activation":
            continue
        born_in = steps[tensor["born"]]["phase"]
        assert born_in == "forward" or (born_in == "backward" and "recorded_backward" in document["summary"]), tensor
        last_reader = max(backward_step_of[index] for index in tensor["saved_by"])
        assert tensor["freed"] == last_reader, (tensor["name"], tensor["freed"], last_reader)


def test_nothing_saved_is_alive_after_backward_and_leaf_grads_persist(finished):
    document = finished
    last = len(document["steps"]) - 1
    for tensor in document["tensors"]:
        if tensor["saved_by"] and tensor["kind"] == "activation":
            assert not alive(tensor, last)
    params = [t for t in document["tensors"] if t["kind"] == "param" and not t.get("frozen") and not t.get("view")]
    grads_of = {t.get("grad_of") for t in document["tensors"] if t["kind"] == "grad" and alive(t, last)}
    assert {p["id"] for p in params} <= grads_of


def test_every_backward_step_is_one_tape_entry(finished):
    document = finished
    if "recorded_backward" in document["summary"]:
        # backward-2 runs every entry once: the recorded backward's and the forward's
        last = [s for s in document["steps"] if s["phase"] == "backward-2"]
        assert sorted(s["entry"] for s in last) == list(range(len(document["tape"])))
        first = [item for item in document["sweep"] if document["steps"][item["step"]]["phase"] == "backward"]
        assert first and all(document["tape"][item["entry"]]["phase"] == "forward" for item in first)
        return
    backward = [s for s in document["steps"] if s["phase"] == "backward"]
    assert len(backward) == len(document["sweep"]) == len(document["tape"])
    assert sorted(s["entry"] for s in backward) == list(range(len(document["tape"])))


def test_saved_bytes_is_the_most_the_forward_tape_holds_at_any_one_step(document):
    """Counted step by step here (no difference array): the unique saved storages alive at each step, each from the
    step of the first forward entry that saves it to the last backward step that reads it, at most."""
    by_id = {t["id"]: t for t in document["tensors"]}
    step_of = {}
    for step in document["steps"]:
        if step["phase"] == "forward" and step["entry"] is not None:
            step_of.setdefault(step["entry"], step["index"])
    saved_from, read_until = {}, {}
    for entry in document["tape"]:
        for uid in entry["saved"] if entry["phase"] == "forward" else ():
            storage = by_id[uid]["storage"]
            saved_from[storage] = min(saved_from.get(storage, 10 ** 9), step_of.get(entry["index"], 0))
    for item in document["sweep"]:
        for uid in item["reads"]:
            storage = by_id[uid]["storage"]
            read_until[storage] = max(read_until.get(storage, -1), item["step"])

    def held(s, step):
        alive = s["born"] <= step and (s["freed"] is None or step <= s["freed"])
        return alive and saved_from[s["id"]] <= step and step <= read_until.get(s["id"], 10 ** 9)

    at = [sum(s["nbytes"] for s in document["storages"] if s["id"] in saved_from and held(s, step))
          for step in range(len(document["steps"]))]
    assert document["summary"]["saved_bytes"] == max(at, default=0)
    assert document["summary"]["saved_bytes"] <= document["summary"]["peak_bytes"]


def test_each_adjoint_is_named_after_the_tensor_it_is_the_gradient_of(document):
    """Step k's incoming adjoint belongs to its entry's output, and what it sends to an input X is dX (deep-mlp's
    TanhBackward of tanh(t19) → t20 once read dt21 in, dt20 out)."""
    assert misnamed_gradients(document) == []
