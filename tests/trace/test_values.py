"""Value descriptions: statistics over the finite values, float16 values that round-trip, sizes that saturate."""
import numpy as np

from backend.trace.values import ValueTable, decode


def describe_all(*arrays, with_values=True):
    table, targets = ValueTable(), [{} for _ in arrays]
    for target, array in zip(targets, arrays):
        table.add(target, array, with_values)
    table.fill()
    return targets


def test_statistics_and_values_round_trip():
    a, b = np.array([[1.0, -2.0], [3.5, 0.25]]), np.arange(5, dtype=np.float32)
    first, second = describe_all(a, b)
    assert (first["min"], first["max"], first["mean"]) == (-2.0, 3.5, 0.6875)
    assert np.isclose(first["norm"], np.sqrt((a * a).sum()))
    np.testing.assert_allclose(decode(first, a.shape), a)
    np.testing.assert_allclose(decode(second, b.shape), b)
    assert second["mean"] == 2.0


def test_non_finite_values_are_left_out_of_the_statistics():
    (target,) = describe_all(np.array([1.0, -np.inf, np.nan, 3.0]))
    assert (target["min"], target["max"], target["mean"]) == (1.0, 3.0, 2.0)
    (empty,) = describe_all(np.array([np.nan, np.inf]))
    assert empty["min"] is None and empty["mean"] is None


def test_large_magnitudes_saturate_in_the_values_but_not_in_the_statistics():
    (target,) = describe_all(np.array([1e6, -1.0]))
    assert target["max"] == 1e6
    assert decode(target, (2,))[0] == 65504.0


def test_large_tensors_carry_statistics_only():
    (target,) = describe_all(np.linspace(-1, 1, 10_000), with_values=False)
    assert "f16" not in target and target["min"] == -1.0 and target["max"] == 1.0


def test_add_statistics_describes_as_add_does_without_values():
    arrays = [np.linspace(-3, 5, 2_000).reshape(40, 50), np.array([2.0, np.nan, -np.inf, 4.0]), np.array([]),
              np.array([np.nan])]
    plain = describe_all(*arrays, with_values=False)
    table, targets = ValueTable(), [{} for _ in arrays]
    for target, array in zip(targets, arrays):
        table.add_statistics(target, array)
    table.fill()
    assert targets == plain
    assert targets[1] == {"min": 2.0, "max": 4.0, "mean": 3.0, "norm": 4.47214}       # √20, six digits
