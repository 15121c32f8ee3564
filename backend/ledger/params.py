"""Parameter tensors of a pre-norm decoder and their count: a GPT's 12h² + 13h per layer (4h MLP, biases, LayerNorm)
plus embeddings and the final norm, or the Llama family's (grouped-query K and V, a SwiGLU MLP, RMSNorm, no biases,
an untied head).

The reference GPT's stated 707 M for 12 × 2048 with vocab 50,257 and tied embeddings has no learned position table
(with one, a 1024-token context adds 2.1 M); `position_embeddings` switches it on (GPT-2 has one). Llama 2 7B's
shape gives its 6,738,415,616.

The GPT family keeps Q, K and V in one tensor (GPT-2's and nanoGPT's c_attn, Megatron's linear_qkv), the Llama
family in three (q_proj, k_proj, v_proj): the same elements, but what ZeRO-1 deals out whole (parallel.py).

Each tensor says how tensor parallelism splits it (Megatron's: column-parallel Q, K, V and the MLP's up
projections by their output features, bias too; row-parallel output and down projections by their input features,
bias kept whole; the embedding and an untied head by vocabulary rows; norms whole) and where a pipeline keeps it
(the embeddings on the first stage, the blocks spread over the stages, the final norm and the head on the last).
"""
from dataclasses import dataclass
from math import prod

COLUMN, ROW, VOCAB = "column", "row", "vocab"     # how tensor parallelism splits a tensor (None: kept whole)
FIRST, LAYER, LAST = "first", "layer", "last"     # the pipeline stage that holds it


@dataclass(frozen=True)
class ParamTensor:
    name: str
    shape: tuple
    copies: int = 1           # how many of these the model holds (one per layer for block tensors)
    split: str = None
    place: str = LAYER

    @property
    def numel(self):
        return prod(self.shape)

    def split_numel(self, tp):
        """Elements of this tensor on one of `tp` tensor-parallel ranks (the largest share when it does not divide)."""
        if self.split is None or tp == 1:
            return self.numel
        return -(-self.numel // tp)


def _linear(name, fan_in, fan_out, bias, split):
    """A linear layer's weight [fan_in, fan_out] and bias; a row-parallel bias is added once, after the reduce."""
    tensors = [(f"{name}.weight", (fan_in, fan_out), split)]
    if bias:
        tensors.append((f"{name}.bias", (fan_out,), COLUMN if split == COLUMN else None))
    return tensors


def _norm(name, config):
    tensors = [(f"{name}.weight", (config.hidden,), None)]
    if config.norm == "layernorm":
        tensors.append((f"{name}.bias", (config.hidden,), None))
    return tensors


def block_tensors(config):
    """One block's tensors as (name, shape, split), in the order a block uses them."""
    h, m, bias = config.hidden, config.mlp_hidden, config.bias
    kv = config.kv_groups * config.head_dim
    block = _norm("ln1", config)
    if config.mlp == "swiglu":
        block += _linear("attn.q", h, h, bias, COLUMN) + _linear("attn.k", h, kv, bias, COLUMN)
        block += _linear("attn.v", h, kv, bias, COLUMN)
    else:
        block += _linear("attn.qkv", h, h + 2 * kv, bias, COLUMN)
    block += _linear("attn.proj", h, h, bias, ROW)
    block += _norm("ln2", config)
    if config.mlp == "swiglu":
        block += _linear("mlp.gate", h, m, bias, COLUMN) + _linear("mlp.up", h, m, bias, COLUMN)
        block += _linear("mlp.down", m, h, bias, ROW)
    else:
        block += _linear("mlp.fc1", h, m, bias, COLUMN) + _linear("mlp.fc2", m, h, bias, ROW)
    return block


def param_tensors(config):
    """Every parameter tensor, block tensors listed once with copies = layers (8-bit Adam blocks are per tensor)."""
    h, layers = config.hidden, config.layers
    tensors = [ParamTensor("wte", (config.vocab, h), split=VOCAB, place=FIRST)]
    if config.position_embeddings:
        tensors.append(ParamTensor("wpe", (config.seq, h), place=FIRST))
    tensors += [ParamTensor(f"layers.*.{name}", shape, layers, split) for name, shape, split in block_tensors(config)]
    tensors += [ParamTensor(name, shape, place=LAST) for name, shape, _ in _norm("ln_f", config)]
    if not config.tied_embeddings:
        tensors.append(ParamTensor("lm_head.weight", (h, config.vocab), split=VOCAB, place=LAST))
    return tensors


def param_count(config):
    return sum(t.numel * t.copies for t in param_tensors(config))
