"""The work cap: priced from the spec before anything runs; the issue's 526-s spec is refused with 413 "work"."""
import pytest

import backend.driver as driver
import backend.trace.run as run
from backend.driver import work
from backend.models import CapError, presets, validate_spec

LINEAR = {"type": "linear", "out": 1}


def issue_spec(inner, outer=64):
    """Issue 15's 234-byte spec with the inner repeat count as a knob (inner=38 is the spec that ran 526 s)."""
    body = [LINEAR, {"type": "tanh"}, LINEAR, {"type": "tanh"}, LINEAR]
    return {"batch": 1, "input": {"kind": "features", "size": 1},
            "layers": [{"type": "repeat", "times": outer, "layers": [{"type": "repeat", "times": inner,
                                                                      "layers": body}]}, LINEAR]}


@pytest.fixture
def engine_never_runs(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the engine ran for a request the work cap should refuse")
    monkeypatch.setattr(run, "run_model", refuse)


def test_the_526_second_spec_is_refused_before_running(client, engine_never_runs):
    response = client.post("/api/trace", json={"spec": issue_spec(38), "checkpoint": {"policy": "sqrt"}})
    assert response.status_code == 413
    body = response.get_json()
    assert body["cap"] == "work" and body["requested"] > body["limit"] == work.WORK_BUDGET_US
    assert body["problems"][0]["path"] == "checkpoint"
    assert "without a checkpoint" in body["error"]


def test_the_snapshot_api_refuses_it_the_same_way(client, engine_never_runs):
    response = client.post("/api/snapshots", json={"spec": issue_spec(38), "checkpoint": {"policy": "sqrt"},
                                                   "view": {"step": 0}})
    assert response.status_code == 413 and response.get_json()["cap"] == "work"


def test_the_price_grows_with_entries_flops_and_elements_and_a_checkpoint_costs_more():
    small, large = validate_spec(issue_spec(2)), validate_spec(issue_spec(8))
    assert work.estimate_work_us(large) > 3 * work.estimate_work_us(small)
    assert work.estimate_work_us(small, {"policy": "sqrt"}) > 2 * work.estimate_work_us(small)
    wide = validate_spec({"batch": 512, "input": {"kind": "features", "size": 512},
                          "layers": [{"type": "linear", "out": 512}]})
    narrow = validate_spec({"batch": 512, "input": {"kind": "features", "size": 512},
                            "layers": [{"type": "linear", "out": 8}]})
    assert work.estimate_work_us(wide) > 5 * work.estimate_work_us(narrow)


@pytest.mark.parametrize("preset_id", presets.PRESETS)
def test_every_preset_is_accepted_with_every_policy(preset_id):
    spec = validate_spec(presets.get(preset_id))
    for checkpoint in (None, {"policy": "sqrt"}, {"policy": "optimal", "budget_bytes": 1}):
        priced = work.check_work(spec, checkpoint)
        assert priced.work_us < work.WORK_BUDGET_US / 4
        assert priced.limits.sweep_s == work.MAX_SOLVE_S.sweep_s      # small models keep the program's full time


def test_a_request_near_the_cap_leaves_the_program_its_minimum_time():
    spec = validate_spec(issue_spec(9))
    priced = work.check_work(spec, {"policy": "sqrt"})
    assert priced.work_us > work.WORK_BUDGET_US * 0.6
    assert work.MIN_SOLVE_S <= priced.limits.sweep_s < work.MAX_SOLVE_S.sweep_s
    with pytest.raises(CapError) as refused:
        work.check_work(validate_spec(issue_spec(12)), {"policy": "sqrt"})
    assert refused.value.cap == "work"


def test_the_largest_plain_spec_under_the_entry_cap_is_priced_within_the_budget():
    """Without a checkpoint, every spec under the 20,000-entry cap of this family is accepted (bench/scale.py)."""
    assert work.check_work(validate_spec(issue_spec(38))).work_us <= work.WORK_BUDGET_US
    assert driver.DEADLINE_S * 1e6 > work.WORK_BUDGET_US


def test_other_engine_jobs_get_the_same_guards(engine_never_runs):
    """run_on_engine (for endpoints with their own runs) prices before running, like a trace."""
    with pytest.raises(CapError) as refused:
        driver.run_on_engine(issue_spec(38), {"policy": "sqrt"}, lambda spec, limits: pytest.fail("ran"))
    assert refused.value.cap == "work"
    name, limits = driver.run_on_engine(presets.get("seed-tape"), {"policy": "sqrt"},
                                        lambda spec, limits: (spec["name"], limits))
    assert name == validate_spec(presets.get("seed-tape"))["name"]         # the job gets the normalized spec
    assert limits.sweep_s == work.MAX_SOLVE_S.sweep_s
