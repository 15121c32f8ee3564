"""Documents compared as a stranger's machine would reproduce them: floats to a stated relative tolerance, the rest exact.

Value statistics are written at 6 significant digits (backend/trace/values.py) after sums whose order the BLAS kernel
chooses, so the last digit moves between machines (OPENBLAS_CORETYPE=Haswell vs SkylakeX: 0.0804554 vs 0.0804555).
Bytes, counts, ids, names and shapes are ints and strings: those stay exact.
"""
import math

STATISTICS_RTOL = 1e-5      # 6 significant digits, with a rounding step's worth of slack either side


def differences(expected, actual, rtol=STATISTICS_RTOL, path="$"):
    """Where `actual` differs from `expected` (floats within `rtol` count as equal), as "path: expected != actual"."""
    if isinstance(expected, bool) or isinstance(actual, bool) or not _both_numbers(expected, actual):
        if isinstance(expected, dict) and isinstance(actual, dict):
            if expected.keys() != actual.keys():
                return [f"{path}: keys {sorted(expected.keys() ^ actual.keys())} on one side only"]
            return [d for key in expected for d in differences(expected[key], actual[key], rtol, f"{path}.{key}")]
        if isinstance(expected, list) and isinstance(actual, list):
            if len(expected) != len(actual):
                return [f"{path}: {len(expected)} items != {len(actual)}"]
            return [d for i, (a, b) in enumerate(zip(expected, actual)) for d in differences(a, b, rtol, f"{path}[{i}]")]
        return [] if expected == actual and type(expected) is type(actual) else [f"{path}: {expected!r} != {actual!r}"]
    if isinstance(expected, int) and isinstance(actual, int):
        return [] if expected == actual else [f"{path}: {expected!r} != {actual!r}"]
    if math.isnan(expected) and math.isnan(actual):
        return []
    return [] if math.isclose(expected, actual, rel_tol=rtol, abs_tol=0.0) else [f"{path}: {expected!r} != {actual!r}"]


def _both_numbers(a, b):
    return isinstance(a, (int, float)) and isinstance(b, (int, float))
