"""The saved-tensor rows: one transformer layer (naive or flash attention), the head, and the once-per-network rows.

A row is one storage the tape keeps for backward, as the engine saves it (PyTorch's choices): layernorm saves
its input and per-row mean and rstd (RMSNorm its input and rstd); matmul saves both operands (the weight is a
parameter, not a row); the bias add and residual add save nothing; the scale multiply saves its scalar;
masked_fill and dropout save masks (bool on CUDA and in this engine, the activations' dtype in torch's CPU
dropout: `masks`); softmax saves its output; gelu (tanh form) saves its input; SwiGLU's SiLU saves its input and
its product saves both factors; rotary positions save one cos and one sin table the layers share. A storage read
by several ops (ln1's output feeds q, k and v) is one row, with every reader in `saved_by`. Shapes are those of
the saved views, dtypes are the engine's numpy names, so a row can be matched against a trace's saved tensors.

Each row says how tensor parallelism splits it (`split`): "tp" rows are per head or per MLP feature, split over
the tensor-parallel ranks; "sequence" rows are the residual stream's (norm inputs and statistics, the dropout masks
after a reduce), split only under sequence parallelism; the rest are whole on every rank. A norm's output is whole
either way: the column-parallel matmuls after it save their input as torch's SequenceParallel all-gathers it
(Megatron instead keeps the shard and gathers again in backward).
"""
from dataclasses import dataclass
from math import prod

from backend.ledger.config import ITEM_BYTES

# Groups: what kind of storage a row is. Korthikanti et al. count every group except the last two.
RESIDUAL, ACTIVATION, ATTENTION_MATRIX, MASK, STATISTICS, CONSTANT = (
    "residual", "activation", "attention_matrix", "mask", "statistics", "constant")
TP, SEQUENCE = "tp", "sequence"
UNCOUNTED_BY_KORTHIKANTI = (STATISTICS, CONSTANT)


@dataclass(frozen=True)
class Row:
    name: str
    shape: tuple
    dtype: str
    op: str                   # the op whose backward needs it
    saved_by: tuple           # every op site holding this storage
    group: str
    why: str = ""
    split: str = None         # TP (heads or MLP features), SEQUENCE (the residual stream) or None (whole)

    @property
    def elements(self):
        return prod(self.shape)

    @property
    def bytes(self):
        return self.elements * ITEM_BYTES[self.dtype]

    def split_bytes(self, tp, sp):
        """Bytes of this row on one of `tp` tensor-parallel ranks, with or without sequence parallelism."""
        if tp > 1 and (self.split == TP or (self.split == SEQUENCE and sp)):
            return -(-self.elements // tp) * ITEM_BYTES[self.dtype]
        return self.bytes

    def to_dict(self, unit_bytes=None):
        row = {"name": self.name, "shape": list(self.shape), "dtype": self.dtype, "bytes": self.bytes,
               "op": self.op, "saved_by": list(self.saved_by), "group": self.group, "why": self.why,
               "split": self.split}
        if unit_bytes:
            row["units"] = self.bytes / unit_bytes
        return row


def total_bytes(rows):
    return sum(row.bytes for row in rows)


def residual_unit_bytes(config):
    """The unit of account: one residual-stream tensor, tokens × hidden in the activation dtype (= b)."""
    return config.tokens * config.hidden * ITEM_BYTES[config.dtype_name]


def _layernorm_rows(config, name, reader, reader_op):
    """A pre-norm: its input and row statistics, and its output as saved by the matmul(s) reading it."""
    b, s, h, dt = config.batch, config.seq, config.hidden, config.dtype_name
    op = config.norm
    rows = [Row(f"{name}.input", (b, s, h), dt, op, (name,), RESIDUAL, "the residual stream entering the norm",
                SEQUENCE)]
    if config.norm == "layernorm":
        rows.append(Row(f"{name}.mean", (b, s, 1), dt, op, (name,), STATISTICS, "per-row mean", SEQUENCE))
    rows += [
        Row(f"{name}.rstd", (b, s, 1), dt, op, (name,), STATISTICS,
            "per-row 1/σ" if config.norm == "layernorm" else "per-row 1/rms", SEQUENCE),
        Row(f"{name}.output", (b, s, h), dt, reader_op, reader, ACTIVATION, "the normalized input of the next matmuls"),
    ]
    return rows


def _naive_attention_rows(config):
    b, s, a, d, dt = config.batch, config.seq, config.heads, config.head_dim, config.dtype_name
    probs_readers = ("attn.softmax",) if config.dropout else ("attn.softmax", "attn.pv")
    repeated = " repeated to every query head" if config.kv_groups < a else ""
    rows = [
        Row("attn.q", (b, a, s, d), dt, "matmul", ("attn.scores",), ACTIVATION, "q for q@kᵀ (a view of q's output)", TP),
        Row("attn.k", (b, a, d, s), dt, "matmul", ("attn.scores",), ACTIVATION,
            f"kᵀ for q@kᵀ (a view of k's output{repeated})", TP),
        Row("attn.scale", (), dt, "mul", ("attn.scale",), CONSTANT, "the 1/√d scalar the scale multiply saves"),
        Row("attn.probs", (b, a, s, s), dt, "softmax", probs_readers, ATTENTION_MATRIX, "softmax saves its output", TP),
    ]
    if config.dropout:
        rows += [
            Row("attn.dropout_mask", (b, a, s, s), config.mask_dtype, "dropout", ("attn.dropout",), ATTENTION_MATRIX,
                "dropout on the probabilities: its mask", TP),
            Row("attn.dropped_probs", (b, a, s, s), dt, "matmul", ("attn.pv",), ATTENTION_MATRIX,
                "the dropout output, left operand of probs@v", TP),
        ]
    rows.append(Row("attn.v", (b, a, s, d), dt, "matmul", ("attn.pv",), ACTIVATION, f"v for probs@v{repeated}", TP))
    return rows


def _flash_attention_rows(config):
    b, s, a, d, dt = config.batch, config.seq, config.heads, config.head_dim, config.dtype_name
    kv = config.kv_groups
    return [
        Row("attn.q", (b, a, s, d), dt, "attention", ("attn.flash",), ACTIVATION, "q, kept to recompute scores", TP),
        Row("attn.k", (b, kv, s, d), dt, "attention", ("attn.flash",), ACTIVATION, "k, kept to recompute scores", TP),
        Row("attn.v", (b, kv, s, d), dt, "attention", ("attn.flash",), ACTIVATION, "v", TP),
        Row("attn.out_heads", (b, a, s, d), dt, "attention", ("attn.flash", "attn.proj"), ACTIVATION,
            "the fused output per head (its backward needs Σ g·out), written [b, s, heads, d] as torch's kernels do: "
            "merging heads for the projection is a view, so the projection saves this same storage", TP),
        Row("attn.logsumexp", (b, a, s), dt, "attention", ("attn.flash",), STATISTICS,
            "one log-sum-exp per row: the seq×seq matrices are recomputed in backward", TP),
    ]


def layer_rows(config, attention=None):
    """The saved tensors of one transformer layer, in forward order, for `attention` (default: the config's)."""
    attention = attention or config.attention
    b, s, h, m, dt = config.batch, config.seq, config.hidden, config.mlp_hidden, config.dtype_name
    rows = _layernorm_rows(config, "ln1", ("attn.q", "attn.k", "attn.v"), "matmul")
    if attention == "naive":
        rows += _naive_attention_rows(config)
        rows.append(Row("attn.output", (b, s, h), dt, "matmul", ("attn.proj",), ACTIVATION,
                        "heads merged (a copy: probs@v is laid out per head): the projection's input", TP))
    else:
        rows += _flash_attention_rows(config)     # its output per head is the projection's input too
    if config.dropout:
        rows.append(Row("attn.proj_dropout_mask", (b, s, h), config.mask_dtype, "dropout", ("attn.proj_dropout",),
                        MASK, "dropout after the projection", SEQUENCE))
    if config.mlp == "swiglu":
        rows += _layernorm_rows(config, "ln2", ("mlp.gate", "mlp.up"), "matmul")
        rows += [
            Row("mlp.gate_output", (b, s, m), dt, "silu", ("mlp.silu",), ACTIVATION, "silu saves its input", TP),
            Row("mlp.silu_output", (b, s, m), dt, "mul", ("mlp.product",), ACTIVATION,
                "SiLU(gate): the product saves both factors", TP),
            Row("mlp.up_output", (b, s, m), dt, "mul", ("mlp.product",), ACTIVATION, "the up projection", TP),
            Row("mlp.product", (b, s, m), dt, "matmul", ("mlp.down",), ACTIVATION, "SiLU(gate)·up: down's input", TP),
        ]
        last = "down"
    else:
        rows += _layernorm_rows(config, "ln2", ("mlp.fc1",), "matmul")
        rows += [
            Row("mlp.fc1_output", (b, s, m), dt, "gelu", ("mlp.gelu",), ACTIVATION,
                "fc1's output after the bias add: gelu saves its input", TP),
            Row("mlp.gelu_output", (b, s, m), dt, "matmul", ("mlp.fc2",), ACTIVATION, "fc2's input", TP),
        ]
        last = "fc2"
    if config.dropout:
        rows.append(Row("mlp.dropout_mask", (b, s, h), config.mask_dtype, "dropout", ("mlp.dropout",), MASK,
                        f"dropout after {last}", SEQUENCE))
    return rows


def head_rows(config):
    """The two vocabulary-sized buffers live at the loss: logits, then (as their gradient p − y) the same size
    again, next to the probabilities cross-entropy saves. The reference figure calls them logits + probabilities."""
    n, v, dt = config.tokens, config.vocab, config.dtype_name
    return [
        Row("head.logits", (n, v), dt, "matmul", ("lm_head",), ACTIVATION,
            "the head's output; the fused loss reads it and its gradient p − y takes its place in backward", TP),
        Row("head.probs", (n, v), dt, "cross_entropy", ("loss",), ACTIVATION,
            "the fused cross-entropy saves the probabilities for p − y", TP),
    ]


def network_rows(config):
    """Rows held once per network, not per layer: token ids, the embedding's dropout mask, the rotary tables and the
    causal mask every layer shares, the final norm, the targets."""
    b, s = config.batch, config.seq
    rows = [Row("embed.indices", (b, s), "int64", "embedding", ("wte",), CONSTANT, "token ids for the scatter-add")]
    if config.position_embeddings:
        rows.append(Row("embed.positions", (s,), "int64", "embedding", ("wpe",), CONSTANT, "position ids"))
    if config.embedding_dropout:
        rows.append(Row("embed.dropout_mask", (b, s, config.hidden), config.mask_dtype, "dropout", ("embed.dropout",),
                        MASK, "dropout after the embeddings", SEQUENCE))
    if config.rotary:
        rows += [Row(f"rope.{table}", (s, config.head_dim), config.dtype_name, "mul", ("attn.rotary",), CONSTANT,
                     f"the rotary {table} table every layer's q and k multiply by") for table in ("cos", "sin")]
    if config.attention == "naive":
        rows.append(Row("attn.causal_mask", (s, s), "bool", "masked_fill", ("attn.mask",), MASK,
                        "one bool mask that every layer's masked_fill saves"))
    rows += _layernorm_rows(config, "ln_f", ("lm_head",), "matmul")
    rows.append(Row("loss.target", (b * s,), "int64", "cross_entropy", ("loss",), CONSTANT, "target ids"))
    return rows
