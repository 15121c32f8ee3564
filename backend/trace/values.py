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
    values = np.asarray(array).astype(np.float64, copy=False).ravel()
    finite = values if np.isfinite(values).all() else values[np.isfinite(values)]
    if finite.size:
        stats = {"min": _round(finite.min()), "max": _round(finite.max()),
                 "mean": _round(finite.sum() / finite.size), "norm": _round(np.sqrt(finite @ finite))}
    else:
        stats = {"min": None, "max": None, "mean": None, "norm": 0.0}
    if values.size <= limit:
        in_range = finite.size == values.size and (not finite.size or max(-stats["min"], stats["max"]) <= F16_MAX)
        stats["f16"] = encode(values if in_range else np.clip(values, -F16_MAX, F16_MAX))
    return stats


def encode(values):
    """Values as base64 float16; callers clip to ±65,504 first (NaN stays NaN, statistics stay exact)."""
    return base64.b64encode(values.astype("<f2").tobytes()).decode("ascii")


def decode(value, shape):
    """The values of a `describe` result as a float64 array of `shape` (for tests and tools)."""
    return np.frombuffer(base64.b64decode(value["f16"]), dtype="<f2").astype(np.float64).reshape(shape)


def _round(value):
    return float(f"{float(value):.6g}")
