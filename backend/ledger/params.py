"""Parameter tensors of a pre-LN GPT and their count: 12h² + 13h per layer (4h MLP) plus embeddings and the final norm.

The reference GPT's stated 707 M for 12 × 2048 with vocab 50,257 and tied embeddings has no learned position table
(with one, a 1024-token context adds 2.1 M); `position_embeddings` switches it on (GPT-2 has one).
"""
from dataclasses import dataclass
from math import prod


@dataclass(frozen=True)
class ParamTensor:
    name: str
    shape: tuple
    copies: int = 1           # how many of these the model holds (one per layer for block tensors)

    @property
    def numel(self):
        return prod(self.shape)


def param_tensors(config):
    """Every parameter tensor, block tensors listed once with copies = layers (8-bit Adam blocks are per tensor)."""
    h, m, layers = config.hidden, config.mlp_hidden, config.layers
    tensors = [ParamTensor("wte", (config.vocab, h))]
    if config.position_embeddings:
        tensors.append(ParamTensor("wpe", (config.seq, h)))
    block = [
        ("ln1.weight", (h,)), ("ln1.bias", (h,)),
        ("attn.q.weight", (h, h)), ("attn.q.bias", (h,)),
        ("attn.k.weight", (h, h)), ("attn.k.bias", (h,)),
        ("attn.v.weight", (h, h)), ("attn.v.bias", (h,)),
        ("attn.proj.weight", (h, h)), ("attn.proj.bias", (h,)),
        ("ln2.weight", (h,)), ("ln2.bias", (h,)),
        ("mlp.fc1.weight", (h, m)), ("mlp.fc1.bias", (m,)),
        ("mlp.fc2.weight", (m, h)), ("mlp.fc2.bias", (h,)),
    ]
    tensors += [ParamTensor(f"layers.*.{name}", shape, layers) for name, shape in block]
    tensors += [ParamTensor("ln_f.weight", (h,)), ParamTensor("ln_f.bias", (h,))]
    if not config.tied_embeddings:
        tensors.append(ParamTensor("lm_head.weight", (h, config.vocab)))
    return tensors


def param_count(config):
    return sum(t.numel * t.copies for t in param_tensors(config))
