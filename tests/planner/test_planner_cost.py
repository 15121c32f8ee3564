"""What keeps planning linear in the tape: one base run, each distinct plan recorded once, bounded sweeps."""
import pytest

import backend.planner.execute as execute
import backend.planner.schedules as schedules
from backend.driver import trace_spec
from backend.models.caps import cap
from backend.models import presets, validate_spec
from backend.planner import Planner, PolicyError, ilp, plan_document, policies, validate
from tests.driver.test_work_cap import issue_spec

TANH_CHAIN = {"input": {"kind": "features", "size": 1},
              "layers": [{"type": "linear", "out": 1},
                         {"type": "repeat", "times": 64, "layers": [{"type": "repeat", "times": 8,
                                                                     "layers": [{"type": "tanh"}]}]}]}


@pytest.fixture
def recordings(monkeypatch):
    """Every recorded run the planner makes: ("document" | "peak", regions, recompute)."""
    made = []

    def counting(name, real):
        def run(spec, regions=(), preserve_rng_state=True, recompute=None):
            made.append((name, tuple(map(tuple, regions)), tuple(recompute or ())))
            return real(spec, regions, preserve_rng_state, recompute=recompute)
        return run
    monkeypatch.setattr(schedules, "record", counting("document", schedules.record))
    monkeypatch.setattr(schedules, "record_peak", counting("peak", schedules.record_peak))
    monkeypatch.setattr(execute, "record", counting("document", execute.record))
    return made


@pytest.mark.parametrize("preset_id", ["deep-mlp", "transformer-tiny"])
def test_each_distinct_plan_is_recorded_at_most_once(recordings, preset_id):
    document = plan_document(validate_spec(presets.get(preset_id)), {"policy": "sqrt"})
    plans = [(regions, recompute) for _, regions, recompute in recordings]
    assert len(plans) == len(set(plans))                       # the base run is the un-checkpointed plan
    assert plans[0] == ((), ())
    assert [kind for kind, *_ in recordings].count("document") == 2     # the base run and the requested run
    assert all(s["executed_peak_bytes"] == s["predicted_peak_bytes"] for s in document["schedules"])


def test_the_sweep_solves_a_bounded_number_of_times(monkeypatch):
    solves = []
    real = ilp.Program.solve
    monkeypatch.setattr(ilp.Program, "solve", lambda self, *a, **k: solves.append(a) or real(self, *a, **k))
    planner = Planner(validate_spec(issue_spec(2)))
    planner.pareto()
    assert len(solves) <= schedules.PARETO_BUDGETS + 1
    assert len(planner.heuristic_plans()) <= 40                  # O(log L) every_k plans for 65 blocks


def test_the_segment_lengths_scored_grow_logarithmically():
    assert policies.sweep_ks(10) == list(range(1, 11))
    many = policies.sweep_ks(4096)
    assert len(many) < 40 and many[-1] == 4096 and policies.sqrt_k(4096) in many


def test_selective_on_a_chain_of_tanh_never_nests_recipes():
    """Each tanh's input is the previous tanh's output: chained recipes once recursed past Python's limit."""
    document = trace_spec(TANH_CHAIN, {"policy": "selective"}, measure=False)
    schedule = document["schedule"]
    assert schedule["recompute_entries"] and schedule["grads_match"]
    assert schedule["predicted_peak_bytes"] == schedule["executed_peak_bytes"]


def test_a_manual_pick_of_a_long_chain_is_refused_naming_the_limit():
    planner = Planner(validate_spec(TANH_CHAIN))
    tanhs = [t["id"] for t in planner.base_document["tensors"]
             if t["produced_by"] is not None and planner.base_document["tape"][t["produced_by"]]["op"] == "tanh"]
    with pytest.raises(PolicyError) as refused:
        planner.plan(validate({"policy": "manual", "recompute": tanhs}, planner.base.n_blocks,
                              set(planner.entry_activations)))
    assert f"at most {cap('recompute_chain')} in a row" in refused.value.problems[0]["message"]
