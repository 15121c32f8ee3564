"""peak(k) = (L/k)·b + k·a + head, counting the recomputed segment's boundary once, and k* = √(L·b/a)."""
import math

import pytest

from backend.ledger import build_ledger, parse_config
from backend.ledger.checkpoint import checkpoint_points, k_star, peak_bytes, schedule_ks
from backend.ledger.config import GIB, MIB

SEED_A = 2464 * MIB
SEED_B = 64 * MIB
SEED_HEAD = 2 * 8192 * 50257 * 4


def test_seed_a_and_b_give_the_seeds_pareto():
    points = checkpoint_points(12, SEED_A, SEED_B, SEED_HEAD)
    assert [p["k"] for p in points] == [1, 3, 12]
    assert [round(p["peak_bytes"] / GIB, 1) for p in points] == [6.2, 10.5, 31.9]
    assert [round(p["compute_factor"], 2) for p in points] == [1.33, 1.33, 1.00]
    assert round(k_star(12, SEED_A, SEED_B), 2) == 0.56


def test_no_checkpointing_is_every_layer_plus_head():
    assert peak_bytes(12, 12, SEED_A, SEED_B, SEED_HEAD) == 12 * SEED_A + SEED_HEAD


def test_the_recomputed_segments_boundary_is_counted_once():
    # k = 1: twelve stored inputs, one recomputed layer whose ln1 input is the twelfth of them.
    assert peak_bytes(1, 12, SEED_A, SEED_B, 0) == 11 * SEED_B + SEED_A
    # k = 3: four stored segment inputs, three recomputed layers.
    assert peak_bytes(3, 12, SEED_A, SEED_B, 0) == 3 * SEED_B + 3 * SEED_A


def test_uneven_segments_round_the_boundary_count_up():
    assert peak_bytes(3, 10, 100, 10, 0) == 3 * 10 + 3 * 100     # segments of 3, 3, 3, 1


def test_uniform_chain_optimum_is_sqrt_l():
    """With b = a the textbook result: k* = √L and peak ≈ 2√L·a."""
    assert k_star(16, 7, 7) == 4
    curve = [peak_bytes(k, 16, 7, 7, 0) for k in range(1, 16)]
    assert min(range(1, 16), key=lambda k: curve[k - 1]) == 4


@pytest.mark.parametrize("layers, expected", [(1, [1]), (2, [1, 2]), (12, [1, 3, 12]), (48, [1, 7, 48])])
def test_schedule_points(layers, expected):
    assert schedule_ks(layers) == expected


def test_k_outside_one_to_l_is_rejected():
    with pytest.raises(ValueError, match="between 1 and the number of layers"):
        peak_bytes(0, 12, SEED_A, SEED_B, 0)


def test_ledger_checkpoint_points_use_its_own_a_and_b():
    ledger = build_ledger(parse_config({}))
    a, b = ledger["per_layer_bytes"], ledger["unit_bytes"]
    fixed = ledger["head_bytes"] + ledger["network_bytes"]
    assert [p["peak_bytes"] for p in ledger["checkpoint"]] == [11 * b + a + fixed, 3 * b + 3 * a + fixed,
                                                               12 * a + fixed]
    assert ledger["checkpoint"][-1]["peak_bytes"] == ledger["activation_bytes"]
    assert ledger["k_star"] == pytest.approx(math.sqrt(12 * b / a))
    assert ledger["k_best"] == 1
    assert len(ledger["checkpoint_curve"]) == 12
    # Checkpointing every layer buys batch: the max batch rises as the peak falls.
    assert [p["max_batch"] for p in ledger["checkpoint"]] == sorted((p["max_batch"] for p in ledger["checkpoint"]),
                                                                     reverse=True)
    assert ledger["checkpoint"][-1]["max_batch"] == ledger["max_batch"]
