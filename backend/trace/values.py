"""Tensor values for the browser: small tensors carry their values (heatmaps), every tensor its statistics.

Values travel as little-endian float16 in base64 under "f16" (2.7 characters a number instead of ~8 as JSON
text): enough precision for a heatmap and an inspector, and it keeps a transformer's trace under 1 MB. They
are copied when a tensor is born and described all at once when the document is built (a handful of numpy
reductions over one buffer, instead of several per tensor).
"""
import base64

import numpy as np

MAX_VALUE_ELEMENTS = 4096
F16_MAX = 65504.0


class ValueTable:
    """Collects (target dict, values) pairs during a run; `fill` writes min/max/mean/norm (and f16) into each."""

    def __init__(self):
        self._chunks = []
        self._targets = []          # (dict to fill, carry the values?)

    def add(self, target, array, with_values):
        flat = np.asarray(array).ravel()
        if flat.size == 0:
            target.update(min=None, max=None, mean=None, norm=0.0)
        elif not with_values:
            target.update(_statistics(flat))     # large: its statistics now, straight from the array
        else:
            self._chunks.append(flat.astype(np.float32))      # a copy: the tensor may change after this step
            self._targets.append((target, with_values))

    def fill(self):
        if not self._chunks:
            return
        sizes = np.array([c.size for c in self._chunks])
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        values = np.concatenate(self._chunks).astype(np.float64)
        finite = np.isfinite(values)
        masked = np.where(finite, values, np.nan)
        clean = np.where(finite, values, 0.0)
        with np.errstate(all="ignore"):
            lows, highs = np.fmin.reduceat(masked, starts), np.fmax.reduceat(masked, starts)
            sums, squares = np.add.reduceat(clean, starts), np.add.reduceat(clean * clean, starts)
            counts = np.add.reduceat(finite.astype(np.int64), starts)
            halves = np.clip(values, -F16_MAX, F16_MAX).astype("<f2").tobytes()
            means = sums / np.maximum(counts, 1)
        seen = (counts > 0).tolist()
        lows, highs, means = _significant(lows).tolist(), _significant(highs).tolist(), _significant(means).tolist()
        norms = _significant(np.sqrt(squares)).tolist()
        starts, sizes = (2 * starts).tolist(), (2 * sizes).tolist()
        for i, (target, with_values) in enumerate(self._targets):
            if seen[i]:
                target.update(min=lows[i], max=highs[i], mean=means[i], norm=norms[i])
            else:
                target.update(min=None, max=None, mean=None, norm=norms[i])
            if with_values:
                target["f16"] = base64.b64encode(halves[starts[i]:starts[i] + sizes[i]]).decode("ascii")
        self._chunks, self._targets = [], []


def _statistics(flat):
    values = flat.astype(np.float64, copy=False)
    finite = values if np.isfinite(values).all() else values[np.isfinite(values)]
    if not finite.size:
        return {"min": None, "max": None, "mean": None, "norm": 0.0}
    low, high, mean, norm = _significant(np.array(
        [finite.min(), finite.max(), finite.sum() / finite.size, np.sqrt(finite @ finite)])).tolist()
    return {"min": low, "max": high, "mean": mean, "norm": norm}


def decode(value, shape):
    """The values of a described tensor as a float64 array of `shape` (for tests and tools)."""
    return np.frombuffer(base64.b64decode(value["f16"]), dtype="<f2").astype(np.float64).reshape(shape)


def _significant(values, digits=6):
    """Round each value to `digits` significant digits (short JSON); NaN and 0 pass through."""
    magnitude = np.floor(np.log10(np.abs(np.where(np.isfinite(values) & (values != 0), values, 1.0))))
    scale = 10.0 ** (digits - 1 - magnitude)
    return np.where(np.isfinite(values), np.round(values * scale) / scale, values)
