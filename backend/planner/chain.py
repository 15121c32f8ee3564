"""Exact checkpoint placement on a chain: store some boundaries, recompute each segment between them once.

Memory model (the seed's peak(k) = (L/k)·b + k·a generalised): peak = Σ stored boundary bytes + the largest
segment's layer bytes. For a cap on a segment's layer bytes, a sliding-window DP finds the cheapest set of
boundaries in O(L); the best cap wins. The candidate caps are the L sums that start at the first layer, searched
by branch and bound: the boundary cost only falls as the cap grows, so between two evaluated caps nothing can
beat (cost at the larger) + (the smaller cap), and most of the L caps are never evaluated. Exact either way.
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
    widest = max(layer_bytes)
    caps = sorted({prefix[j] for j in range(1, n + 1) if prefix[j] >= widest} | {widest})
    evaluated = {}

    def at(i):
        if i not in evaluated:
            evaluated[i] = _cheapest_boundaries(prefix, boundary_bytes, caps[i])
        return evaluated[i]

    def peak(i):
        return at(i)[0] + caps[i]

    best = min((0, len(caps) - 1), key=lambda i: (peak(i), i))
    intervals = [(0, len(caps) - 1)]
    while intervals:
        low, high = intervals.pop()
        if high - low < 2 or at(high)[0] + caps[low] >= peak(best):
            continue                  # every cap strictly inside costs more than the best found
        middle = (low + high) // 2
        if (peak(middle), middle) < (peak(best), best):
            best = middle
        intervals += [(low, middle), (middle, high)]
    return peak(best), at(best)[1]


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
