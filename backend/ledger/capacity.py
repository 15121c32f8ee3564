"""What fits on a device: the largest micro-batch and the memory-vs-batch staircase behind "batch 1 fits, batch 2 OOMs".

Activation bytes are affine in the batch (every row scales with it except the shared causal mask), so two
evaluations give the per-sequence slope and the fixed part exactly, and the largest batch is one division.
The staircase counts resident state plus activations; allocator slack and backward's transient gradients
(one layer's worth) come on top, which is why the last batch that fits on paper often dies in practice.
"""
import dataclasses
import math

MAX_CURVE_POINTS = 48


def affine_in_batch(activation_bytes_of, config):
    """(fixed_bytes, per_sequence_bytes) of `activation_bytes_of(config)` as a function of config.batch."""
    one = activation_bytes_of(dataclasses.replace(config, batch=1))
    two = activation_bytes_of(dataclasses.replace(config, batch=2))
    per_sequence = two - one
    return one - per_sequence, per_sequence


def max_batch(device_bytes, resident_bytes, fixed_bytes, per_sequence_bytes):
    """The largest whole batch with resident + fixed + batch × per-sequence ≤ device (0 when none fits)."""
    room = device_bytes - resident_bytes - fixed_bytes
    if room < per_sequence_bytes:
        return 0
    return room // per_sequence_bytes


def batch_curve(device_bytes, resident_bytes, fixed_bytes, per_sequence_bytes, largest):
    """Memory at a range of batches around the largest that fits, at most MAX_CURVE_POINTS of them."""
    top = max(8, math.ceil(1.5 * (largest + 1)))
    if top <= MAX_CURVE_POINTS:
        batches = list(range(1, top + 1))
    else:
        step = top / (MAX_CURVE_POINTS - 1)
        batches = sorted({1, largest, largest + 1} | {max(1, round(i * step)) for i in range(MAX_CURVE_POINTS)})
        batches = [n for n in batches if n >= 1]
    points = []
    for batch in batches:
        activation = fixed_bytes + batch * per_sequence_bytes
        total = resident_bytes + activation
        points.append({"batch": batch, "activation_bytes": activation, "resident_bytes": resident_bytes,
                       "total_bytes": total, "fits": total <= device_bytes})
    return points
