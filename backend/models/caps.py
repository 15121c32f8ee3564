"""The size caps a spec is held to: one table, read at call time by the checks and by GET /api/schema.

Each cap lives here once; fields name a cap instead of repeating its number, so the editor's ranges follow a
change (tests monkeypatch CAPS to see the browser's slider follow).
"""

CAPS = {
    "batch": 4096,
    "features": 4096,
    "vocab": 8192,
    "seq": 512,
    "width": 4096,                     # a linear's out
    "embedding_dim": 1024,
    "heads": 16,
    "repeat": 64,
    "layers_per_list": 64,
    "depth": 4,                        # wrappers nested in wrappers
    "name_length": 80,
    "elements_per_tensor": 1 << 23,    # 8 Mi elements
    "total_bytes": 256 * 1024 * 1024,  # 256 MiB
    "tape_entries": 20_000,
    "accumulate": 16,                  # micro-batches per optimizer step
    "penalty_weight": 1000.0,          # loss.gradient_penalty.weight (λ)
    "loss_scale": 2.0 ** 24,           # the largest fixed precision.loss_scale
    "recompute_chain": 32,             # recomputed tensors in a row: a manual pick's, and an integer-program unit's
    "ledger_tokens": 1 << 24,          # the ledger's batch × seq: 16 Mi tokens per micro-batch
}


def cap(name):
    """The current value of one cap."""
    return CAPS[name]
