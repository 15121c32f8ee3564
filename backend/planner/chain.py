"""Exact checkpoint placement on a chain: store some boundaries, recompute each segment between them once.

Memory model (the seed's peak(k) = (L/k)·b + k·a generalised): peak = Σ stored boundary bytes + the largest
segment's layer bytes. For every cap on a segment's layer bytes, a sliding-window DP finds the cheapest set of
boundaries; the best cap wins. O(L²) over the L caps that start at the first layer, O(L) each.
"""
from collections import deque


def min_peak_segments(layer_bytes, boundary_bytes):
    """(peak, segments) minimising Σ boundary bytes + max segment bytes; segments are [start, end) pairs.

    boundary_bytes[i] is the size of the input to layer i (what a segment starting at i must keep).
    """
    n = len(layer_bytes)
    prefix = [0]
    for a in layer_bytes:
        prefix.append(prefix[-1] + a)
    best = (float("inf"), [(0, n)])
    caps = sorted({prefix[j] - prefix[i] for i in (0,) for j in range(1, n + 1)} | {max(layer_bytes)})
    for cap in caps:
        if cap < max(layer_bytes):
            continue
        cost, cuts = _cheapest_boundaries(prefix, boundary_bytes, cap)
        if cost + cap < best[0]:
            best = (cost + cap, cuts)
    return best


def _cheapest_boundaries(prefix, boundary_bytes, cap):
    """Min Σ boundary bytes over segmentations whose segments each hold ≤ cap layer bytes (monotone deque)."""
    n = len(prefix) - 1
    cost = [0.0] * (n + 1)             # cost[j]: cheapest way to cover layers [0, j) ending a segment at j
    parent = [0] * (n + 1)
    window = deque([0])                 # segment starts i, by increasing cost[i] + boundary_bytes[i]
    cost_at = lambda i: cost[i] + boundary_bytes[i]
    for j in range(1, n + 1):
        while window and prefix[j] - prefix[window[0]] > cap:
            window.popleft()
        start = window[0]
        cost[j], parent[j] = cost_at(start), start
        if j < n:
            while window and cost_at(window[-1]) >= cost_at(j):
                window.pop()
            window.append(j)
    segments, j = [], n
    while j > 0:
        segments.append((parent[j], j))
        j = parent[j]
    return cost[n], segments[::-1]
