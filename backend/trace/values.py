"""Tensor values for the browser: small tensors carry their values (heatmaps), large ones statistics only.

Values travel as little-endian float16 in base64 under "f16" (2.7 characters a number instead of ~8 as JSON
text): enough precision for a heatmap and an inspector, and it keeps a transformer's trace under 1 MB.
"""
import base64

import numpy as np

MAX_VALUE_ELEMENTS = 4096
F16_MAX = 65504.0


def describe(array, limit=MAX_VALUE_ELEMENTS):
    """{"min", "max", "mean", "norm"} of the finite values, plus "f16" (the values) when size ≤ limit."""
    array = np.asarray(array)
    as_float = array.astype(np.float64, copy=False) if array.dtype != np.float64 else array
    finite = as_float[np.isfinite(as_float)]
    stats = {"min": _round(finite.min()) if finite.size else None,
             "max": _round(finite.max()) if finite.size else None,
             "mean": _round(finite.mean()) if finite.size else None,
             "norm": _round(np.sqrt(np.sum(finite * finite)))}
    if as_float.size <= limit:
        stats["f16"] = encode(as_float)
    return stats


def encode(array):
    clipped = np.clip(np.nan_to_num(array, nan=0.0, posinf=F16_MAX, neginf=-F16_MAX), -F16_MAX, F16_MAX)
    return base64.b64encode(clipped.astype("<f2").tobytes()).decode("ascii")


def decode(value, shape):
    """The values of a `describe` result as a float64 array of `shape` (for tests and tools)."""
    return np.frombuffer(base64.b64decode(value["f16"]), dtype="<f2").astype(np.float64).reshape(shape)


def _round(value):
    return float(f"{float(value):.6g}")
