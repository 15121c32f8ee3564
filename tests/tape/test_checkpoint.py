"""checkpoint(): bitwise-equal gradients with the RNG state preserved, a visible mismatch without it."""
import pytest

from backend.models import presets, validate_spec
from backend.planner.execute import grad_mismatch, record_regions

PRESETS = ["seed-tape", "lab1-mlp", "residual-unit", "deep-mlp", "transformer-tiny"]


@pytest.mark.parametrize("preset", PRESETS)
def test_every_block_checkpointed_gives_bitwise_equal_grads(preset):
    spec = validate_spec(presets.get(preset))
    _, reference = record_regions(spec, [])
    document, grads = record_regions(spec, [[0], list(range(1, len(spec["layers"])))])
    assert all(v == 0.0 for v in grad_mismatch(grads, reference).values())
    assert any(step["phase"] == "recompute" for step in document["steps"])
    assert any(entry["op"] == "checkpoint" and entry["family"] == "checkpoint" for entry in document["tape"])


def test_dropout_without_preserved_rng_state_reports_a_mismatch():
    spec = validate_spec(presets.get("transformer-tiny"))
    _, reference = record_regions(spec, [])
    _, grads = record_regions(spec, [[1], [2]], preserve_rng_state=False)
    mismatch = grad_mismatch(grads, reference)
    assert max(mismatch.values()) > 0.0
    assert mismatch["layers[0].weight"] > 0.0       # the wrong masks reach the embedding too
