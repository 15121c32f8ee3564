"""Checkpoint every k layers: peak(k) = (L/k)·b + k·a + head, its compute factor, and k* = √(L·b/a).

a is one layer's saved bytes, b one boundary (a residual-stream tensor). Storing the L/k segment inputs and
recomputing one k-layer segment at a time costs (L/k)·b + k·a. The segment being recomputed is stored as one
of those boundaries *and* saved again by its first layer's ln1, as the same storage, so the exact peak counts
it once: (⌈L/k⌉ − 1)·b + k·a + head. That is what makes k = L (no checkpointing: nothing stored twice,
nothing recomputed) land on L·a + head, 31.9 GiB for the reference GPT (12 × 2048), where the uncorrected
formula says 32.0; at k = 1 and √L the correction moves its stated 6.2 and 10.5 GiB by 64 MiB, under their rounding.
Any k < L recomputes every layer once: 3F → 4F, a compute factor of 4/3.
"""
import math

RECOMPUTE_FACTOR = 4 / 3      # forward F + backward 2F, plus one recomputed forward


def peak_bytes(k, layers, layer_bytes, boundary_bytes, fixed_bytes):
    """Peak activation bytes when every k-th layer input is kept and segments are recomputed in backward.

    `fixed_bytes` is what no schedule removes (the head, once-per-network rows).
    """
    if not 1 <= k <= layers:
        raise ValueError(f"k must be between 1 and the number of layers ({layers}); got {k}")
    segments = -(-layers // k)
    return (segments - 1) * boundary_bytes + k * layer_bytes + fixed_bytes


def compute_factor(k, layers):
    return 1.0 if k == layers else RECOMPUTE_FACTOR


def schedule_ks(layers):
    """The issue's three points: every layer, every √L layers, none; duplicates dropped for tiny L."""
    return sorted({1, max(1, round(math.sqrt(layers))), layers})


def checkpoint_points(layers, layer_bytes, boundary_bytes, fixed_bytes, ks=None):
    """[{k, peak_bytes, compute_factor, recomputes}] for k in `ks` (default: 1, round(√L), L)."""
    return [
        {"k": k, "peak_bytes": peak_bytes(k, layers, layer_bytes, boundary_bytes, fixed_bytes),
         "compute_factor": compute_factor(k, layers), "recomputes": k < layers}
        for k in (ks if ks is not None else schedule_ks(layers))
    ]


def k_star(layers, layer_bytes, boundary_bytes):
    """The continuous minimizer of (L/k)·b + k·a: √(L·b/a). Below 1 means "checkpoint every layer"."""
    return math.sqrt(layers * boundary_bytes / layer_bytes)
