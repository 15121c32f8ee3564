"""Every size cap a request is held to, in one table read at call time by the checks and by GET /api/schema: a
spec's, a snapshot or session body's, a posted trace document's, a ledger query's, the matrix chain's, a run's
ranks and the importer's flags.

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
    # a snapshot or session body (backend/api/payloads.py)
    "spec_bytes": 256 * 1024,          # a body's spec, as JSON
    "checkpoint_bytes": 64 * 1024,
    "session_bytes": 256 * 1024,       # a whole workspace document
    "history_entries": 50,             # undo (and redo) entries kept (static/js/state/workspace.js HISTORY_LIMIT)
    "history_entry_bytes": 64 * 1024,
    "origin_bytes": 4 * 1024,
    "baseline_bytes": 64 * 1024,
    "view_step": 1_000_000,            # a view's step cursor
    "id_length": 200,                  # a selected node's or an unfolded group's id
    "title_length": 120,               # a snapshot's title
    "version_length": 64,              # a session's version string
    "zoom_keys": 8,                    # a view's zoom object (k, x, y)
    "zoom_key_length": 32,
    "unfolded_groups": 500,
    "json_depth": 64,                  # any posted body's nesting
    # the matrix-chain lesson (POST /api/matrix-chain)
    "chain_widths": 6,                 # n0 … n5: a chain of at most five Jacobians
    "chain_width": 65_536,             # keeps every count below 2^53, exact as a JSON number in a browser
    "chain_executed_width": 64,        # the executed chain's largest width, after scaling down
    # a posted trace document (backend/trace/intake.py): rows per table, bounded before a row is built (they admit
    # every document the project writes: a 20,000-entry run has ~3 tensors and 2 steps an entry), and one storage
    "posted_tensors": 120_000,
    "posted_storages": 120_000,
    "posted_tape": 40_000,
    "posted_steps": 120_000,
    "posted_sweep": 40_000,
    "posted_storage_bytes": 2 ** 50,   # 1 PiB: bytes are summed in int64
    # a run of many ranks, and the torch importer's command line
    "ranks": 16,                       # a run's ranks: what --nproc records and what POST /api/trace takes
    "fake_world": 4096,                # --fake --world-size
    "warmup_steps": 100,               # --warmup
    "every_k": 1024,                   # --checkpoint every_k=N
    "checkpoint_policies": 8,          # --checkpoint A,B,…: each is a full training step of the user's model
    # the ledger's fields (backend/ledger/config.py)
    "ledger_tokens": 1 << 24,          # the ledger's batch × seq: 16 Mi tokens per micro-batch
    "ledger_layers": 512,
    "ledger_hidden": 65_536,
    "ledger_heads": 1024,              # heads and kv_heads
    "ledger_mlp_ratio": 16.0,
    "ledger_vocab": 1 << 20,
    "ledger_seq": 1 << 20,
    "ledger_batch": 65_536,            # batch and micro_batches
    "ledger_device_gib": float(1 << 20),
    "ledger_gpus": 65_536,             # dp and the fits table's cluster
    "ledger_model_parallel": 1024,     # tp and pp
    "ledger_virtual_stages": 64,       # vpp
}


def cap(name):
    """The current value of one cap."""
    return CAPS[name]
