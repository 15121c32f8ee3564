"""Checkpoint policies: each turns the base run into regions (runs of consecutive blocks to recompute)."""
import math

from backend.planner.blocks import segments_from_blocks
from backend.planner.chain import min_peak_segments

POLICIES = ("none", "every_k", "sqrt", "selective", "optimal", "manual")


class PolicyError(ValueError):
    """A checkpoint request the planner cannot run; `problems` are {path, message} like spec problems."""

    def __init__(self, problems):
        super().__init__("; ".join(f"{p['path']}: {p['message']}" for p in problems))
        self.problems = problems


def every_k(n_blocks, k):
    """Checkpoint the model in segments of k blocks (checkpoint_sequential)."""
    return [list(range(start, min(start + k, n_blocks))) for start in range(0, n_blocks, k)]


def sqrt_k(n_blocks):
    return max(1, round(math.sqrt(n_blocks)))


def chain_optimum(base):
    """The chain DP's minimum-peak segmentation over the blocks' boundary and internal activation bytes."""
    layer_bytes, boundary_bytes = block_bytes(base)
    _peak, segments = min_peak_segments(layer_bytes, boundary_bytes)
    return [list(range(start, end)) for start, end in segments]


def block_bytes(base):
    """(activation bytes born inside each block, bytes of each block's input) from the base run."""
    layer_bytes = [0] * base.n_blocks
    boundary_bytes = [0] * base.n_blocks
    forward_entry_at = {s: e for s, (phase, e) in enumerate(base.steps) if phase == "forward" and e is not None}
    for st in base.storages:
        entry = forward_entry_at.get(st["born"])
        if entry is None or st["kind"] != "activation":
            continue
        block = base.entry_block[entry]
        if block is not None:
            layer_bytes[block] += st["nbytes"]
    for entry, block in enumerate(base.entry_block):
        if block is not None and block + 1 < base.n_blocks and base.entry_block[entry + 1:entry + 2] != [block]:
            storage = base.output_storage.get(entry)
            boundary_bytes[block + 1] = next((s["nbytes"] for s in base.storages if s["id"] == storage), 0)
    return layer_bytes, boundary_bytes


def manual_regions(base, tensor_blocks, recompute):
    """The blocks holding the tensors a user asked to recompute, checkpointed as consecutive runs."""
    blocks = {tensor_blocks[t] for t in recompute if tensor_blocks.get(t) is not None}
    return segments_from_blocks(blocks, base.n_blocks, k=base.n_blocks)


def validate(checkpoint, n_blocks, tensor_ids):
    """The normalized request {policy, params, preserve_rng_state}; raises PolicyError with {path, message}."""
    if checkpoint is None:
        checkpoint = {"policy": "none"}
    if not isinstance(checkpoint, dict):
        raise PolicyError([{"path": "checkpoint", "message": 'must be an object like {"policy": "sqrt"}'}])
    policy = checkpoint.get("policy", "none")
    problems = []
    if policy not in POLICIES:
        problems.append({"path": "checkpoint.policy", "message": "must be one of " + ", ".join(POLICIES)})
    preserve = checkpoint.get("preserve_rng_state", True)
    if not isinstance(preserve, bool):
        problems.append({"path": "checkpoint.preserve_rng_state", "message": "must be true or false"})
    params = {}
    if policy == "every_k":
        k = checkpoint.get("k")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n_blocks:
            problems.append({"path": "checkpoint.k", "message": f"must be a positive integer ≤ L ({n_blocks})"})
        params["k"] = k
    if policy == "optimal":
        budget = checkpoint.get("budget_bytes")
        if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
            problems.append({"path": "checkpoint.budget_bytes", "message": "must be a positive integer (bytes)"})
        params["budget_bytes"] = budget
    if policy == "manual":
        ids = checkpoint.get("recompute")
        if not isinstance(ids, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
            problems.append({"path": "checkpoint.recompute", "message": "must be a list of tensor ids"})
        else:
            unknown = [t for t in ids if t not in tensor_ids]
            if unknown:
                problems.append({"path": "checkpoint.recompute",
                                 "message": f"names tensors that are not activations of this model: {unknown[:5]}"})
        params["recompute"] = ids
    if problems:
        raise PolicyError(problems)
    return {"policy": policy, "params": params, "preserve_rng_state": preserve}
