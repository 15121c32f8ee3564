"""Tensor values for the browser: small tensors carry their values (heatmaps), every tensor its statistics.

Values travel as little-endian float16 in base64 under "f16" (2.7 characters a number instead of ~8 as JSON
text): enough precision for a heatmap and an inspector, and it keeps a transformer's trace under 1 MB. They
are copied when a tensor is born and described all at once when the document is built (a handful of numpy
reductions over one buffer, instead of several per tensor). A recorder that must not stall the run it watches
(the torch importer's hooks) copies a tensor as it is born and reduces the copy when the document is built.
"""
import base64

import numpy as np

MAX_VALUE_ELEMENTS = 4096
F16_MAX = 65504.0
DESCRIPTION = ("min", "max", "mean", "norm", "f16")      # what fill writes into a target
DEFERRED_BYTES = 256 * 2**20      # copies kept for add_statistics' deferred reduction; past this, reduced at once


class ValueTable:
    """Collects what to describe during a run; `fill` writes min/max/mean/norm (and f16 values) into each target."""

    def __init__(self):
        self._small = []            # (target dict, float32 copy): described together, values included
        self._large = []            # (target dict, [min, max, sum, sum of squares, finite count])
        self._deferred = []         # (target dict, flat copy): add_statistics' tensors, reduced in fill
        self._deferred_bytes = 0
        self._same = []             # (target dict, source dict): described as the source is

    def add(self, target, array, with_values):
        flat = np.asarray(array).ravel()
        if flat.size == 0:
            self._large.append((target, [np.nan, np.nan, 0.0, 0.0, 0]))
        elif with_values:
            self._small.append((target, flat.astype(np.float32)))     # a copy: the tensor may change later
        else:
            self._large.append((target, _raw_statistics(flat)))      # reduced now, straight from the array

    def add_statistics(self, target, array):
        """Statistics only (never values) of `array` as it is now. The array is copied (one memcpy: the caller is
        watching a run and may not stall it) and reduced in `fill`, up to DEFERRED_BYTES of copies; past that it
        is reduced at once. Without BLAS either way: `add`'s sum of squares is a BLAS dot, which fights a host's
        own thread pool (torch's: ~100× slower inside the torch recorder)."""
        array = np.asarray(array)
        if self._deferred_bytes + array.nbytes <= DEFERRED_BYTES:
            self._deferred.append((target, array.flatten()))        # flatten always copies: the tensor may change
            self._deferred_bytes += array.nbytes
        else:
            self._large.append((target, _plain_statistics(array.ravel())))

    def add_same(self, target, source):
        """`target` is described as `source` (already added) is: the caller knows both hold the same values in the
        same order (a view of unchanged data, a gradient already described), so nothing is copied or reduced."""
        self._same.append((target, source))

    def fill(self):
        if self._deferred:
            raw = _statistics_together([copy for _, copy in self._deferred])
            self._large.extend((target, numbers) for (target, _), numbers in zip(self._deferred, raw))
        self._deferred, self._deferred_bytes = [], 0
        if self._small:
            raw, halves, spans = _reduce_together([chunk for _, chunk in self._small])
            _write([target for target, _ in self._small], raw)
            for (target, _), (start, stop) in zip(self._small, spans):
                target["f16"] = base64.b64encode(halves[start:stop]).decode("ascii")
        if self._large:
            _write([target for target, _ in self._large],
                   np.array([numbers for _, numbers in self._large], dtype=np.float64))
        for target, source in self._same:
            target.update((key, source[key]) for key in DESCRIPTION if key in source)
        self._small, self._large, self._same = [], [], []


def _reduce_together(chunks):
    """[min, max, sum, sum of squares, finite count] per chunk, the float16 bytes, and each chunk's byte span."""
    sizes = np.array([c.size for c in chunks])
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    values = np.concatenate(chunks)
    with np.errstate(all="ignore"):
        if np.isfinite(values).all():                 # the usual case: no masking passes
            clean, counts = values, sizes
            lows, highs = np.minimum.reduceat(values, starts), np.maximum.reduceat(values, starts)
        else:
            finite = np.isfinite(values)
            masked, clean = np.where(finite, values, np.nan), np.where(finite, values, 0.0)
            lows, highs = np.fmin.reduceat(masked, starts), np.fmax.reduceat(masked, starts)
            counts = np.add.reduceat(finite.astype(np.int64), starts)
        raw = np.stack([lows.astype(np.float64), highs.astype(np.float64),
                        np.add.reduceat(clean, starts, dtype=np.float64),
                        np.add.reduceat(np.square(clean, dtype=np.float64), starts), counts], axis=1)
        saturated = bool(np.fmax.reduce(np.abs(raw[:, :2]), axis=None, initial=0.0) > F16_MAX)
        halves = (np.clip(values, -F16_MAX, F16_MAX) if saturated else values).astype("<f2").tobytes()
    spans = [(2 * start, 2 * (start + size)) for start, size in zip(starts.tolist(), sizes.tolist())]
    return raw, halves, spans


TOGETHER_ELEMENTS = 2**20          # small copies reduced in one pass, as float64: 8 MiB at a time
ALONE_ELEMENTS = 2**14             # a copy this large is reduced on its own (reduceat is slower than reduce per element)


def _statistics_together(copies):
    """_plain_statistics' five numbers for each flat copy: the small ones (most of them) by a few numpy reductions
    over many at once, where one call per copy would cost more than its arithmetic."""
    raw = [[np.nan, np.nan, 0.0, 0.0, 0]] * len(copies)
    group, size = [], 0
    for i, copy in enumerate(copies):
        if copy.size >= ALONE_ELEMENTS:
            raw[i] = _plain_statistics(copy)
        elif copy.size:
            group.append(i)
            size += copy.size
        if group and (size >= TOGETHER_ELEMENTS or i == len(copies) - 1):
            for j, numbers in zip(group, _reduce_statistics([copies[j] for j in group])):
                raw[j] = numbers
            group, size = [], 0
    return raw


def _reduce_statistics(chunks):
    """[min, max, sum, sum of squares, finite count] of each non-empty chunk, elementwise reductions only; a chunk
    holding a non-finite value (an empty_like output read before it is filled) is reduced on its own."""
    sizes = np.array([c.size for c in chunks])
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    with np.errstate(all="ignore"):             # an empty_like output's garbage may hold signalling NaNs
        values = np.concatenate(chunks, dtype=np.float64, casting="unsafe")
    finite = np.isfinite(values)
    unclean = None
    if not finite.all():
        unclean = np.flatnonzero(np.logical_or.reduceat(~finite, starts)).tolist()
        values[~finite] = 0.0                   # those chunks' rows are replaced below
    lows, highs = np.minimum.reduceat(values, starts), np.maximum.reduceat(values, starts)
    totals = np.add.reduceat(values, starts)
    squares = np.add.reduceat(np.square(values, out=values), starts)
    raw = np.stack([lows, highs, totals, squares, sizes], axis=1).tolist()
    for i in unclean or ():
        raw[i] = _plain_statistics(chunks[i])
    return raw


def _write(targets, raw):
    """Rounded statistics into each target; min, max and mean are None where no value is finite."""
    counts = raw[:, 4]
    seen = (counts > 0).tolist()
    lows, highs = _significant(raw[:, 0]).tolist(), _significant(raw[:, 1]).tolist()
    with np.errstate(all="ignore"):
        means = _significant(raw[:, 2] / np.maximum(counts, 1)).tolist()
    norms = _significant(np.sqrt(raw[:, 3])).tolist()
    for i, target in enumerate(targets):
        if seen[i]:
            target.update(min=lows[i], max=highs[i], mean=means[i], norm=norms[i])
        else:
            target.update(min=None, max=None, mean=None, norm=norms[i])


def _raw_statistics(flat):
    values = flat.astype(np.float64, copy=False)
    finite = values if np.isfinite(values).all() else values[np.isfinite(values)]
    if not finite.size:
        return [np.nan, np.nan, 0.0, 0.0, 0]
    return [finite.min(), finite.max(), finite.sum(), finite @ finite, finite.size]


def _plain_statistics(flat):
    """The same five numbers as _raw_statistics from elementwise reductions only."""
    with np.errstate(all="ignore"):             # an empty_like output is read before it is filled
        values = flat.astype(np.float64, copy=False)
        if not values.size:
            return [np.nan, np.nan, 0.0, 0.0, 0]
        low, high = values.min(), values.max()
        if not (np.isfinite(low) and np.isfinite(high)):     # min and max propagate NaN: finite ones mean all are
            values = values[np.isfinite(values)]
            if not values.size:
                return [np.nan, np.nan, 0.0, 0.0, 0]
            low, high = values.min(), values.max()
        total = values.sum()
        squares = np.square(values, out=values if values is not flat else None)    # a copy of ours: in place
        return [low, high, total, np.add.reduce(squares), values.size]


def decode(value, shape):
    """The values of a described tensor as a float64 array of `shape` (for tests and tools)."""
    return np.frombuffer(base64.b64decode(value["f16"]), dtype="<f2").astype(np.float64).reshape(shape)


def _significant(values, digits=6):
    """Round each value to `digits` significant digits (short JSON); NaN and 0 pass through."""
    magnitude = np.floor(np.log10(np.abs(np.where(np.isfinite(values) & (values != 0), values, 1.0))))
    scale = 10.0 ** (digits - 1 - magnitude)
    return np.where(np.isfinite(values), np.round(values * scale) / scale, values)
