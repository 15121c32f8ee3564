"""Layer rows as the engine saves them, checked against Korthikanti's closed form across shapes and dtypes."""
import dataclasses

import pytest

from backend.ledger import activation_bytes, build_ledger, parse_config
from backend.ledger.capacity import affine_in_batch, max_batch
from backend.ledger.korthikanti import formula_bytes, repriced_bytes
from backend.ledger.rows import layer_rows, network_rows
from tests.ledger.reference import reference_config


@pytest.mark.parametrize("values", [
    {}, {"batch": "1", "seq": "128"}, {"hidden": "768", "heads": "12", "seq": "2048"},
    {"hidden": "64", "heads": "4", "seq": "16", "batch": "2", "dtype": "fp16"},
])
def test_rows_at_16_bits_reproduce_korthikantis_formula(values):
    config = parse_config(values)
    assert repriced_bytes(layer_rows(config, "naive"), 2) == formula_bytes(config)


def test_each_row_matches_a_saved_tensor_shape_and_dtype():
    config = parse_config({"layers": "2", "hidden": "64", "heads": "4", "batch": "2", "seq": "16", "vocab": "100"})
    rows = {row.name: row for row in layer_rows(config)}
    assert rows["ln1.input"].shape == (2, 16, 64) and rows["ln1.mean"].shape == (2, 16, 1)
    assert rows["attn.q"].shape == (2, 4, 16, 16) and rows["attn.k"].shape == (2, 4, 16, 16)
    assert rows["attn.probs"].shape == (2, 4, 16, 16)
    assert rows["mlp.fc1_output"].shape == (2, 16, 256) and rows["mlp.fc1_output"].op == "gelu"
    assert rows["ln1.output"].saved_by == ("attn.q", "attn.k", "attn.v")
    assert {row.dtype for row in rows.values() if row.group == "mask"} == {"bool"}
    assert {row.dtype for row in rows.values() if row.group != "mask" and row.name != "attn.dropout_mask"} == {
        "float32"}


def test_dtype_halves_values_but_not_masks():
    fp32 = {row.name: row.bytes for row in layer_rows(parse_config({}))}
    fp16 = {row.name: row.bytes for row in layer_rows(parse_config({"dtype": "fp16"}))}
    assert fp16["attn.probs"] * 2 == fp32["attn.probs"]
    assert fp16["attn.dropout_mask"] == fp32["attn.dropout_mask"]


def test_without_dropout_there_are_no_masks_and_probs_feed_probs_at_v():
    rows = {row.name: row for row in layer_rows(parse_config({"dropout": "false"}))}
    assert not [name for name in rows if "dropout" in name]
    assert rows["attn.probs"].saved_by == ("attn.softmax", "attn.pv")


def test_causal_mask_is_once_per_network_and_only_for_naive_attention():
    naive = [row.name for row in network_rows(parse_config({}))]
    flash = [row.name for row in network_rows(parse_config({"attention": "flash"}))]
    assert "attn.causal_mask" in naive and "attn.causal_mask" not in flash
    assert "attn.causal_mask" not in [row.name for row in layer_rows(parse_config({}))]


def test_flash_per_layer_is_linear_in_sequence_length():
    short = build_ledger(parse_config({"attention": "flash", "seq": "1024", "batch": "8"}))["per_layer_bytes"]
    long = build_ledger(parse_config({"attention": "flash", "seq": "2048", "batch": "4"}))["per_layer_bytes"]
    assert short == long
    naive_short = build_ledger(parse_config({"seq": "1024", "batch": "8"}))["per_layer_bytes"]
    naive_long = build_ledger(parse_config({"seq": "2048", "batch": "4"}))["per_layer_bytes"]
    assert naive_long > naive_short


def test_activation_bytes_are_affine_in_batch():
    config = reference_config()
    fixed, per_sequence = affine_in_batch(activation_bytes, config)
    for batch in (3, 5, 8):
        assert activation_bytes(dataclasses.replace(config, batch=batch)) == fixed + batch * per_sequence
    # The causal mask, shared by every layer and sequence, and each layer's 4-byte 1/√d scalar.
    assert fixed == 1024 * 1024 + 12 * 4


def test_max_batch_is_zero_when_resident_state_alone_overflows():
    assert max_batch(device_bytes=100, resident_bytes=120, fixed_bytes=0, per_sequence_bytes=10) == 0
    assert max_batch(device_bytes=100, resident_bytes=50, fixed_bytes=5, per_sequence_bytes=10) == 4
    ledger = build_ledger(parse_config({"device_gib": "1"}))
    assert ledger["max_batch"] == 0 and not any(point["fits"] for point in ledger["batch_curve"])


def test_batch_curve_marks_the_staircase():
    ledger = build_ledger(parse_config({}))
    fits = {point["batch"]: point["fits"] for point in ledger["batch_curve"]}
    assert fits[ledger["max_batch"]] and not fits[ledger["max_batch"] + 1]
    small = build_ledger(parse_config({"layers": "1", "hidden": "64", "heads": "1", "vocab": "100", "seq": "8"}))
    assert small["max_batch"] > 1000 and len(small["batch_curve"]) <= 50
    assert any(point["batch"] == small["max_batch"] for point in small["batch_curve"])
