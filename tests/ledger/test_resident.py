"""Resident state: weights, grads, fp32 master under mixed precision, Adam moments, 8-bit Adam's blocks."""
import pytest

from backend.ledger import build_ledger, parse_config
from backend.ledger.params import ParamTensor, param_count, param_tensors
from backend.ledger.resident import optimizer_state_bytes, resident_state
from tests.ledger.reference import reference_config


def resident(**values):
    config = parse_config(values)
    return resident_state(config, param_tensors(config)), param_count(config)


@pytest.mark.parametrize("values, per_param", [
    ({}, 16),                                                        # fp32 Adam: 4 + 4 + 8
    ({"optimizer": "sgd"}, 8),                                       # weights + grads
    ({"dtype": "fp16", "mixed_precision": "true"}, 16),              # 2 + 2 + 4 master + 8 moments
    ({"dtype": "bf16", "mixed_precision": "true", "optimizer": "sgd"}, 8),   # 2 + 2 + 4 master
    ({"dtype": "fp16"}, 8),                                          # pure fp16: moments in fp16
])
def test_bytes_per_param(values, per_param):
    state, count = resident(**values)
    assert state["total_bytes"] == per_param * count
    assert state["bytes_per_param"] == per_param


def test_mixed_precision_master_copy_is_fp32():
    state, count = resident(dtype="fp16", mixed_precision="true")
    assert state["weights_bytes"] == 2 * count and state["master_bytes"] == 4 * count


def test_adam8bit_is_int8_moments_plus_one_fp32_scale_per_2048_block():
    config = parse_config({"optimizer": "adam8bit"})
    tensors = [ParamTensor("w", (2048,)), ParamTensor("b", (2049,)), ParamTensor("layer", (10,), copies=3)]
    # m and v: 1 byte per element, plus 4 bytes per block: 1 + 2 + 3 × 1 blocks.
    assert optimizer_state_bytes(config, tensors) == 2 * ((2048 + 2049 + 30) + 4 * (1 + 2 + 3))


def test_adam8bit_takes_fp32_training_from_16_to_about_10_bytes_per_param():
    state, _ = resident(optimizer="adam8bit")
    assert state["bytes_per_param"] == pytest.approx(10, abs=0.01)
    assert state["bytes_per_param"] > 10


def test_untied_head_and_learned_positions_add_their_tables():
    base = param_count(reference_config())
    assert param_count(reference_config(tied_embeddings="false")) == base + 2048 * 50257
    assert param_count(reference_config(position_embeddings="true")) == base + 1024 * 2048


def test_per_layer_parameters_are_12h2_plus_13h():
    one = param_count(reference_config(layers="1"))
    two = param_count(reference_config(layers="2"))
    assert two - one == 12 * 2048 ** 2 + 13 * 2048


def test_ledger_reports_the_resident_breakdown():
    ledger = build_ledger(parse_config({}))
    assert ledger["resident_bytes"] == 16 * ledger["params"]
    assert ledger["resident"]["optimizer_bytes"] == 8 * ledger["params"]
