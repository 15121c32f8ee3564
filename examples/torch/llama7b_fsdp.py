"""A Llama-shaped 7B decoder (Llama 2 7B's shape: 32 layers, width 4,096, 32 heads, SwiGLU MLP 11,008, RMSNorm,
rotary positions, untied 32,000-token embeddings; 6.74 B parameters) training on 4,096-token sequences, micro-batch 1,
under FSDP2 per layer with a bf16 mixed-precision policy (parameters all-gathered and computed in bf16, gradients
reduced in fp32) and AdamW. Far too big for this machine: record it fake, on 8 fake ranks.

    .venv/bin/python -m backend.importers.torch examples/torch/llama7b_fsdp.py --fake --world-size 8 --out run.json

Written here with torch.nn (random init, no downloads). LAYERS, SEQ and WIDTH can be lowered through the
environment (TAPESCOPE_LLAMA_LAYERS, ..._SEQ, ..._WIDTH, ..._HIDDEN, ..._VOCAB) for a quick look at the same code."""
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.nn import functional as F


def _size(name, default):
    return int(os.environ.get(f"TAPESCOPE_LLAMA_{name}", default))


LAYERS, WIDTH, HEADS, HIDDEN, VOCAB, SEQ = (_size("LAYERS", 32), _size("WIDTH", 4096), _size("HEADS", 32),
                                            _size("HIDDEN", 11008), _size("VOCAB", 32000), _size("SEQ", 4096))
MICRO_BATCH = 1


class RMSNorm(nn.Module):
    def __init__(self, width, eps=1e-5):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(width)), eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotary_tables(head_dim, seq, base=10000.0):
    inverse = 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)
    angles = torch.outer(torch.arange(seq).float(), inverse)
    return torch.cos(angles), torch.sin(angles)


def rotate(x, cos, sin):
    """Rotary positions on (batch, heads, seq, head_dim): each pair of features turned by its position's angle."""
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(WIDTH, WIDTH, bias=False) for _ in range(4))

    def forward(self, x, cos, sin):
        batch, seq, width = x.shape
        q, k, v = (w(x).view(batch, seq, HEADS, width // HEADS).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        y = F.scaled_dot_product_attention(rotate(q, cos, sin), rotate(k, cos, sin), v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(batch, seq, width))


class FeedForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1, self.w3 = nn.Linear(WIDTH, HIDDEN, bias=False), nn.Linear(WIDTH, HIDDEN, bias=False)
        self.w2 = nn.Linear(HIDDEN, WIDTH, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention_norm, self.attention = RMSNorm(WIDTH), Attention()
        self.ffn_norm, self.feed_forward = RMSNorm(WIDTH), FeedForward()

    def forward(self, x, cos, sin):
        x = x + self.attention(self.attention_norm(x), cos, sin)
        return x + self.feed_forward(self.ffn_norm(x))


class Llama(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok_embeddings = nn.Embedding(VOCAB, WIDTH)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.norm, self.output = RMSNorm(WIDTH), nn.Linear(WIDTH, VOCAB, bias=False)
        cos, sin = rotary_tables(WIDTH // HEADS, SEQ)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, tokens):
        x = self.tok_embeddings(tokens)
        for layer in self.layers:
            x = layer(x, self.cos, self.sin)
        return self.output(self.norm(x))


def loss_fn(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))


def build():
    torch.manual_seed(0)
    model = Llama()
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.layers:
        fully_shard(layer, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    tokens = torch.randint(0, VOCAB, (MICRO_BATCH, SEQ + 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    assert dist.is_initialized(), "run it on ranks: --fake --world-size 8 (or --nproc N for real ones)"
    return model, (tokens[:, :-1], tokens[:, 1:]), loss_fn, optimizer
