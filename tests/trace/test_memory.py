"""The memory core on literal lifetimes: live for born ≤ s ≤ freed, None alive to the end, int64, per kind."""
import numpy as np
import pytest

from backend.trace.memory import (add_changes, alive_at, holders_at, lifetime_changes, live_bytes, live_bytes_by_kind,
                                  live_from_deltas, peak, step_deltas)
from backend.trace.memory_kinds import MEMORY_KIND_NAMES


def storage(id, born, freed, nbytes, kind="activation", scope="layers[0]"):
    return {"id": id, "born": born, "freed": freed, "nbytes": nbytes, "kind": kind, "scope": scope}


def test_a_lifetime_counts_from_its_birth_through_the_step_that_frees_it():
    assert live_bytes([(1, 3, 8)], 6).tolist() == [0, 8, 8, 8, 0, 0]
    assert live_bytes([(2, 2, 5)], 4).tolist() == [0, 0, 5, 0]           # made and freed within one step
    assert live_bytes([(4, None, 7)], 6).tolist() == [0, 0, 0, 0, 7, 7]  # never freed: alive to the end
    assert live_bytes([(0, 5, 3)], 6).tolist() == [3] * 6                # freed at the last step
    assert live_bytes([], 3).tolist() == [0, 0, 0]


def test_live_bytes_are_int64_and_exact_past_float_precision():
    huge = 2 ** 53 + 1                      # a float64 sum would round it
    live = live_bytes([(0, None, huge), (1, 1, 1)], 3)
    assert live.dtype == np.int64 and live.tolist() == [huge, huge + 1, huge]


def test_lifetimes_sharing_steps_add_up():
    lifetimes = [(0, 2, 10), (1, None, 100), (2, 3, 1000), (3, 3, 1)]
    expected = [sum(n for b, f, n in lifetimes if b <= s and (f is None or s <= f)) for s in range(5)]
    assert live_bytes(lifetimes, 5).tolist() == expected == [10, 110, 1110, 1101, 100]


def test_difference_points_move_a_lifetime_as_a_new_lifetime_would():
    n_steps = 6
    delta = step_deltas([(0, 1, 4), (1, 4, 16)], n_steps)
    assert len(delta) == n_steps + 1 and delta[n_steps] == 0
    # release the 16 bytes at step 2 instead of 4, and add a transient copy at step 3
    moved = [(5, 16), (3, -16)] + lifetime_changes(3, 3, 2, n_steps)
    assert live_from_deltas(add_changes(delta, moved), n_steps).tolist() == \
        live_bytes([(0, 1, 4), (1, 2, 16), (3, 3, 2)], n_steps).tolist() == [4, 20, 16, 2, 0, 0]
    assert lifetime_changes(2, None, 9, n_steps) == [(2, 9), (n_steps, -9)]


def test_by_kind_has_every_kind_and_sums_to_the_total():
    storages = [storage(0, 0, None, 64, "param"), storage(1, 1, 2, 32), storage(2, 2, None, 64, "grad")]
    live, by_kind = live_bytes_by_kind(storages, 4)
    assert list(by_kind) == list(MEMORY_KIND_NAMES)
    assert by_kind["param"].tolist() == [64] * 4
    assert by_kind["activation"].tolist() == [0, 32, 32, 0]
    assert by_kind["grad"].tolist() == [0, 0, 64, 64]
    assert by_kind["optimizer"].tolist() == [0] * 4
    assert live.tolist() == [64, 96, 160, 128] and live.dtype == np.int64


def test_a_storage_of_an_undeclared_kind_is_refused():
    with pytest.raises(KeyError):
        live_bytes_by_kind([storage(0, 0, None, 1, "not_a_kind")], 2)


def test_the_peak_is_the_first_step_holding_the_most():
    assert peak(np.array([3, 9, 2, 9], dtype=np.int64)) == (9, 1)
    assert isinstance(peak(np.array([1], dtype=np.int64))[0], int)


def test_holders_at_a_step_are_the_storages_alive_then_grouped_by_scope_and_kind():
    storages = [storage(0, 0, None, 64, "param", "layers[0]"), storage(1, 1, 2, 32, "activation", "layers[0]"),
                storage(2, 1, 3, 16, "activation", "layers[0]"), storage(3, 3, 3, 8, "activation", "layers[1]")]
    tensors = [{"id": 10, "storage": 1}, {"id": 11, "storage": 1}, {"id": 12, "storage": 3}]
    assert [s["id"] for s in alive_at(2, storages)] == [0, 1, 2]
    assert [s["id"] for s in alive_at(3, storages)] == [0, 2, 3]
    groups = holders_at(2, tensors, storages)
    assert [(g["scope"], g["kind"], g["bytes"], g["storages"], g["tensors"]) for g in groups] == [
        ("layers[0]", "param", 64, [0], []), ("layers[0]", "activation", 48, [1, 2], [10, 11])]
    live, _ = live_bytes_by_kind(storages, 4)
    for step in range(4):
        assert sum(g["bytes"] for g in holders_at(step, tensors, storages)) == live[step]
