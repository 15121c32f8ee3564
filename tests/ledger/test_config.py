"""Config parsing: defaults, caps, per-field problems, combinations; strings are parsed, never evaluated."""
import pytest

from backend.ledger.config import FIELDS, MODEL_PRESETS, PRESET_COMMON, LedgerConfig, LedgerConfigError, parse_config


def problems_of(values):
    with pytest.raises(LedgerConfigError) as caught:
        parse_config(values)
    return {p["path"]: p["message"] for p in caught.value.problems}


def test_defaults_are_gpt2_small():
    config = parse_config({})
    assert config == LedgerConfig()
    assert (config.layers, config.hidden, config.heads, config.vocab, config.batch, config.seq) == (
        12, 768, 12, 50257, 8, 1024)
    assert (config.dtype, config.attention, config.dropout, config.tied_embeddings, config.position_embeddings) == (
        "fp32", "naive", True, True, True)
    assert config.device_gib == 24
    gpt2_small = {**PRESET_COMMON, **MODEL_PRESETS["gpt2-small"]}          # what the page's Model menu fills in
    assert all(getattr(config, name) == value for name, value in gpt2_small.items() if name != "title")


def test_strings_and_json_values_parse_alike():
    from_query = parse_config({"layers": "24", "mlp_ratio": "2.5", "dropout": "off", "dtype": "BF16",
                               "mixed_precision": "true"})
    from_json = parse_config({"layers": 24, "mlp_ratio": 2.5, "dropout": False, "dtype": "bf16",
                              "mixed_precision": True})
    assert from_query == from_json
    assert from_query.mlp_hidden == 1920                                   # 2.5 × GPT-2 small's 768


@pytest.mark.parametrize("name", [n for n, f in FIELDS.items() if f.type in ("integer", "number")])
def test_every_size_has_a_cap(name):
    field = FIELDS[name]
    too_big = str(int(field.high) + 1)
    assert problems_of({name: too_big})[name].endswith(f"to {int(field.high):,}; got {int(field.high) + 1:,}")


@pytest.mark.parametrize("raw", ["__import__('os').system('true')", "1+1", "2**40", "1e3", "nan", "inf", "-1",
                                 "", " ", "0x10", "12abc", "１２", "9" * 30])
def test_numbers_are_plain_digits_only(raw):
    assert "layers" in problems_of({"layers": raw})


def test_float_fields_reject_nan_and_exponents():
    assert "device_gib" in problems_of({"device_gib": "nan"})
    assert "mlp_ratio" in problems_of({"mlp_ratio": "4e0"})
    assert "mlp_ratio" in problems_of({"mlp_ratio": float("inf")})


def test_booleans_and_choices_name_the_allowed_values():
    problems = problems_of({"dropout": "maybe", "attention": "sparse", "optimizer": "lion", "dtype": "fp8"})
    assert problems["dropout"] == 'must be true or false, not "maybe"'
    assert problems["attention"] == 'must be one of "naive", "flash"; got "sparse"'
    assert '"sgd", "adam", "adam8bit"' in problems["optimizer"]
    assert '"fp32", "fp16", "bf16"' in problems["dtype"]


def test_json_true_is_not_a_number():
    assert problems_of({"layers": True})["layers"] == "must be a whole number from 1 to 512, not true"


def test_every_bad_field_is_reported_at_once():
    assert set(problems_of({"layers": "0", "heads": "x", "bogus": "1"})) == {"layers", "heads", "bogus"}


def test_unknown_fields_are_named():
    assert "is not a field" in problems_of({"layer": "12"})["layer"]


@pytest.mark.parametrize("values, path, words", [
    ({"hidden": "2048", "heads": "3"}, "heads", "must divide hidden"),
    ({"hidden": "10", "heads": "1", "mlp_ratio": "0.33"}, "mlp_ratio", "whole number"),
    ({"mixed_precision": "true"}, "mixed_precision", "16-bit"),
    ({"batch": "65536", "seq": "1024"}, "batch", "tokens"),
])
def test_combinations_that_make_no_model(values, path, words):
    assert words in problems_of(values)[path]


def test_combinations_are_judged_alongside_field_problems():
    problems = problems_of({"layers": "0", "hidden": "2048", "heads": "3"})
    assert set(problems) == {"layers", "heads"}


def test_a_combination_with_a_bad_field_is_not_judged_against_a_default():
    # hidden is unreadable, so "heads must divide hidden (2,048)" would be about a value nobody typed.
    assert set(problems_of({"hidden": "x", "heads": "5"})) == {"hidden"}
