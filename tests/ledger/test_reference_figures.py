"""The reference GPT (12 × 2048, 16 heads, MLP 4×, vocab 50,257, tied, batch 8 × 1024, fp32, dropout, naive): the
figures issue 8 pins, from the ledger's own rows."""
import pytest

from backend.ledger import build_ledger
from backend.ledger.config import GIB, MIB
from backend.ledger.rows import layer_rows, total_bytes
from tests.ledger.reference import reference_config

ATTENTION_MATRIX_ROWS = {"attn.probs", "attn.dropout_mask", "attn.dropped_probs"}


@pytest.fixture(scope="module")
def reference():
    return reference_config()


@pytest.fixture(scope="module")
def ledger(reference):
    return build_ledger(reference)


def test_parameters_are_707_million(ledger):
    assert ledger["params"] == 707_229_696
    assert round(ledger["params"] * 2 / GIB, 2) == 1.32       # the seed's fp16 weight bytes


def test_head_is_logits_plus_probabilities_3_07_gib(ledger):
    assert ledger["head_bytes"] == 2 * 8 * 1024 * 50257 * 4
    assert round(ledger["head_bytes"] / GIB, 2) == 3.07


def test_attention_matrix_rows_are_1152_mib_per_layer(ledger):
    rows = {row["name"]: row for row in ledger["rows"]}
    assert ATTENTION_MATRIX_ROWS <= set(rows)
    assert sum(rows[name]["bytes"] for name in ATTENTION_MATRIX_ROWS) == 1152 * MIB
    assert rows["attn.dropout_mask"]["dtype"] == "bool"
    assert {row["name"] for row in ledger["rows"] if row["group"] == "attention_matrix"} == ATTENTION_MATRIX_ROWS


def test_flash_attention_removes_exactly_the_attention_matrix_rows(reference):
    naive = {row.name: row for row in layer_rows(reference, "naive")}
    flash = {row.name: row for row in layer_rows(reference, "flash")}
    # Besides the three matrices, naive's q@kᵀ path saves the 4-byte 1/√d scalar; the fused op keeps it as an
    # attribute. Naive's probs@v is laid out per head, so merging heads for the projection copies it (attn.output);
    # the fused kernels write [b, s, heads, d], so their output per head is the projection's input too (a view).
    assert set(naive) - set(flash) == ATTENTION_MATRIX_ROWS | {"attn.scale", "attn.output"}
    assert naive["attn.scale"].bytes == 4
    assert flash["attn.out_heads"].saved_by == ("attn.flash", "attn.proj")
    assert flash["attn.out_heads"].bytes == naive["attn.output"].bytes
    # What flash keeps instead: that output and a log-sum-exp per row.
    assert set(flash) - set(naive) == {"attn.out_heads", "attn.logsumexp"}
    assert flash["attn.logsumexp"].bytes == 8 * 16 * 1024 * 4
    for name in set(naive) & set(flash):
        assert naive[name].bytes == flash[name].bytes, name
    removed = sum(naive[name].bytes for name in ATTENTION_MATRIX_ROWS | {"attn.scale", "attn.output"})
    added = flash["attn.out_heads"].bytes + flash["attn.logsumexp"].bytes
    assert total_bytes(flash.values()) == total_bytes(naive.values()) - removed + added


def test_per_layer_is_korthikanti_rows_at_fp32_plus_layernorm_statistics(ledger):
    stats = 4 * 8 * 1024 * 4            # ln1/ln2 mean and rstd, one float32 per row
    scale = 4                           # the 1/√d scalar the scale multiply saves
    assert ledger["per_layer_bytes"] == 2208 * MIB + stats + scale
    assert ledger["unit_bytes"] == 64 * MIB


def test_korthikanti_formula_at_fp16_is_1184_mib_and_2208_at_fp32_with_byte_masks(ledger):
    k = ledger["korthikanti"]
    assert k["formula_fp16_bytes"] == 1184 * MIB
    assert k["rows_at_16bit_bytes"] == 1184 * MIB
    assert k["rows_at_dtype_bytes"] == 2208 * MIB
    assert k["seed"]["korthikanti_fp32_bytes"] == 2208 * MIB


def test_seed_figure_is_reconstructed_by_one_mlp_width_row(ledger):
    seed = ledger["korthikanti"]["seed"]
    assert seed["per_layer_bytes"] == 2464 * MIB and seed["units"] == 38.5
    assert seed["extra_row"]["name"] == "mlp.fc1_product" and seed["extra_row"]["units"] == 4
    assert seed["reconstructed_bytes"] == seed["per_layer_bytes"]
    text = " ".join(ledger["korthikanti"]["explanation"])
    assert "2,464 MiB" in text and "2,208 MiB" in text and "1,184 MiB" in text


def test_activation_total_and_per_token(ledger):
    rows_once = ledger["network_bytes"]
    assert ledger["activation_bytes"] == 12 * ledger["per_layer_bytes"] + ledger["head_bytes"] + rows_once
    assert ledger["per_token_bytes"] == pytest.approx(12 * ledger["per_layer_bytes"] / 8192)
    assert ledger["per_token_layer_bytes"] / 1024 == pytest.approx(276, abs=0.1)   # KiB; the seed's 308 at 2,464


def test_staircase_batch_1_fits_16_gb_and_batch_2_does_not():
    """Resident 16 B/param (10.5 GiB) plus ~3.6 GiB per 1024-token sequence."""
    gigabytes = lambda n: f"{n * 1e9 / GIB:.4f}"     # noqa: E731 - a card's marketing size in GiB
    assert build_ledger(reference_config(device_gib=gigabytes(16)))["max_batch"] == 1
    assert build_ledger(reference_config(device_gib=gigabytes(12)))["max_batch"] == 0
    assert build_ledger(reference_config(device_gib="24"))["max_batch"] == 3
