"""Our transformer-tiny preset (backend/models/presets.py) in torch, shape for shape: embedding 50 -> 32,
2 pre-LN blocks (4 heads, naive causal attention, MLP ratio 4, dropout 0.1), final LayerNorm, Linear 32 -> 50,
cross-entropy, Adam (lr 0.001); seq 16, batch 2. Module paths mirror the engine's scopes: `layers.1.attn` is
our `layers[1].attn`. Differences PyTorch really has are listed in tests/importers/test_torch_import.py."""
import math

import torch
from torch import nn
from torch.nn import functional as F

VOCAB, WIDTH, HEADS, SEQ, BATCH, DROPOUT = 50, 32, 4, 16, 2, 0.1


class Attention(nn.Module):
    """q, k, v and proj as separate Linears; scores, causal mask, softmax, dropout, then @ v (impl naive)."""

    def __init__(self):
        super().__init__()
        self.q, self.k, self.v, self.proj = (nn.Linear(WIDTH, WIDTH) for _ in range(4))
        self.register_buffer("causal_mask", torch.triu(torch.ones(SEQ, SEQ, dtype=torch.bool), 1), persistent=False)

    def split_heads(self, h, linear):
        batch, seq, _ = h.shape
        return linear(h).view(batch, seq, HEADS, WIDTH // HEADS).permute(0, 2, 1, 3)

    def forward(self, h):
        batch, seq, _ = h.shape
        q, k, v = self.split_heads(h, self.q), self.split_heads(h, self.k), self.split_heads(h, self.v)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(WIDTH // HEADS))
        scores = scores.masked_fill(self.causal_mask[:seq, :seq], float("-inf"))
        probs = F.dropout(F.softmax(scores, dim=-1), DROPOUT, self.training)
        mixed = probs @ v
        out = self.proj(mixed.permute(0, 2, 1, 3).reshape(batch, seq, WIDTH))
        return F.dropout(out, DROPOUT, self.training)        # the engine's block drops inside attn's scope


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(WIDTH, 4 * WIDTH), nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, h):
        return F.dropout(self.fc2(F.gelu(self.fc1(h))), DROPOUT, self.training)


class Block(nn.Module):
    """Pre-LN: h + drop(attn(ln1(h))), then h + drop(fc2(gelu(fc1(ln2(h)))))."""

    def __init__(self):
        super().__init__()
        self.ln1, self.attn, self.ln2, self.mlp = nn.LayerNorm(WIDTH), Attention(), nn.LayerNorm(WIDTH), MLP()

    def forward(self, h):
        h = h + self.attn(self.ln1(h))
        return h + self.mlp(self.ln2(h))


class TransformerTiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Embedding(VOCAB, WIDTH), Block(), Block(), nn.LayerNorm(WIDTH),
                                     nn.Linear(WIDTH, VOCAB)])

    def forward(self, tokens):
        h = tokens
        for layer in self.layers:
            h = layer(h)
        return h


def loss_fn(logits, target):
    return F.cross_entropy(logits.reshape(-1, VOCAB), target.reshape(-1))


def build():
    torch.manual_seed(0)
    model = TransformerTiny()
    tokens, target = torch.randint(0, VOCAB, (BATCH, SEQ)), torch.randint(0, VOCAB, (BATCH, SEQ))
    return model, (tokens, target), loss_fn, torch.optim.Adam(model.parameters(), lr=0.001)
