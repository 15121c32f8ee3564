"""A small GPT (nanoGPT's shape, written here with torch.nn, random init, no downloads): token and position
embeddings, 4 pre-LN blocks with fused causal attention (scaled_dot_product_attention), weight-tied head,
cross-entropy, AdamW. The blocks are `transformer.h`, the largest ModuleList: what --checkpoint wraps.
Width 256 on a batch of 8 × 64 tokens (3.2 M parameters, a 61 MB peak): small, yet each op does enough work that
recording costs about 2× the plain step (bench/torch_import.py); at width 64 Python's per-op hooks dominate (~7×)."""
import math

import torch
from torch import nn
from torch.nn import functional as F

VOCAB, CONTEXT, WIDTH, HEADS, LAYERS, BATCH, SEQ = 128, 64, 256, 4, 4, 8, 64
HEAD_DIM = WIDTH // HEADS


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(WIDTH, 3 * WIDTH)
        self.c_proj = nn.Linear(WIDTH, WIDTH)
        self.dropout = 0.1
        self.resid_dropout = nn.Dropout(0.1)

    def forward(self, x):
        batch, seq, _ = x.shape
        q, k, v = self.c_attn(x).chunk(3, dim=2)      # under tensor parallelism, this rank's heads (gpt_tp.py)
        heads = q.shape[-1] // HEAD_DIM
        q, k, v = (t.view(batch, seq, heads, HEAD_DIM).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0)
        return self.resid_dropout(self.c_proj(y.transpose(1, 2).contiguous().view(batch, seq, heads * HEAD_DIM)))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_fc, self.gelu, self.c_proj = nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        x = self.c_fc(x)
        x = self.gelu(x)
        x = self.c_proj(x)
        x = self.dropout(x)
        return x


class Block(nn.Module):
    """nanoGPT's block, as nanoGPT writes it."""

    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(WIDTH)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(WIDTH)
        self.mlp = MLP()

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(VOCAB, WIDTH), wpe=nn.Embedding(CONTEXT, WIDTH), drop=nn.Dropout(0.1),
            h=nn.ModuleList([Block() for _ in range(LAYERS)]), ln_f=nn.LayerNorm(WIDTH)))
        self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.transformer.wte.weight = self.lm_head.weight          # weight tying, as in GPT-2
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * LAYERS))

    def forward(self, idx):
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(positions))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


def loss_fn(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def build():
    torch.manual_seed(0)
    model = GPT()
    idx = torch.randint(0, VOCAB, (BATCH, SEQ + 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    return model, (idx[:, :-1], idx[:, 1:]), loss_fn, optimizer
