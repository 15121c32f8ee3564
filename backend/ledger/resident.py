"""Resident state: the bytes that persist across steps (weights, grads, fp32 master copy, optimizer moments).

Plain fp32 Adam is 4 + 4 + 8 = 16 B/param. Mixed precision keeps 16-bit weights and grads for compute, an fp32
master copy that takes the updates, and fp32 moments: 2 + 2 + 4 + 8 = 16 B/param. 8-bit Adam stores m and v as
one byte each (a dynamic code) in 2,048-element blocks per tensor, each block with one fp32 absmax: ~2 B/param, so
fp32 training drops from 16 to ~10 B/param. SGD here is plain SGD (no momentum buffer). The loss scaler's one
scalar and counter are left out.
"""
from backend.ledger.config import DTYPE_BYTES

ADAM8BIT_BLOCK = 2048
FP32_BYTES = 4


def _blocks(numel):
    return -(-numel // ADAM8BIT_BLOCK)


def optimizer_state_bytes(config, tensors):
    """Bytes of the optimizer's per-parameter state (moments, and for 8-bit Adam their block scales)."""
    count = sum(t.numel * t.copies for t in tensors)
    if config.optimizer == "sgd":
        return 0
    if config.optimizer == "adam":
        moment_bytes = FP32_BYTES if config.mixed_precision else DTYPE_BYTES[config.dtype]
        return 2 * count * moment_bytes
    # adam8bit: two one-byte moments, each with one fp32 absmax per 2,048-element block of every tensor.
    scales = sum(_blocks(t.numel) * t.copies for t in tensors)
    return 2 * (count + scales * FP32_BYTES)


def resident_state(config, tensors):
    """{weights, grads, master, optimizer, total}_bytes and bytes_per_param for the given parameter tensors."""
    count = sum(t.numel * t.copies for t in tensors)
    weight_bytes = count * DTYPE_BYTES[config.dtype]
    state = {
        "weights_bytes": weight_bytes,
        "grads_bytes": weight_bytes,
        "master_bytes": count * FP32_BYTES if config.mixed_precision else 0,
        "optimizer_bytes": optimizer_state_bytes(config, tensors),
    }
    state["total_bytes"] = sum(state.values())
    state["bytes_per_param"] = state["total_bytes"] / count
    return state
