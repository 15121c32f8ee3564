"""The distributed tests' model: 4 pre-LN residual MLP blocks (no dropout, so every rank and a single process compute
the same step), built plain, under DDP (small buckets) or under FSDP2 per block; a MODEL_FILE for the command line
too (TAPESCOPE_TEST_WRAP picks the wrapping)."""
import os

import torch
from torch import nn
from torch.nn import functional as F

WIDTH, HIDDEN, BLOCKS, BATCH, SEQ = 32, 128, 4, 8, 4
BUCKET_CAP_MB = 0.02           # 20,971 B: the 4 blocks' 134 kB of gradients in several buckets
WRAPS = ("ddp", "fsdp", "fsdp_keep")
MAX_NORM = 1.0


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln, self.up, self.down = nn.LayerNorm(WIDTH), nn.Linear(WIDTH, HIDDEN), nn.Linear(HIDDEN, WIDTH)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.ln(x))))


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(BLOCKS))
        self.head = nn.Linear(WIDTH, 1)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class ClippingAdamW(torch.optim.AdamW):
    """AdamW whose step first clips the gradients' global norm to 1 (under FSDP2 the norm of sharded gradients:
    clip_grad_norm_'s all-reduce)."""

    def step(self, closure=None):
        torch.nn.utils.clip_grad_norm_([p for group in self.param_groups for p in group["params"]], MAX_NORM)
        return super().step(closure)


def build_plain():
    """(model, (inputs, target), loss_fn, optimizer) of the whole global batch, in one process."""
    torch.manual_seed(0)
    model = Tiny()
    inputs, target = torch.randn(BATCH, SEQ, WIDTH), torch.randn(BATCH, SEQ, 1)
    return model, (inputs, target), F.mse_loss, ClippingAdamW(model.parameters(), lr=1e-2)


def build(wrap=None):
    """This rank's step: the same model and global batch on every rank, wrapped, and the rank's slice of the batch."""
    import torch.distributed as dist
    wrap = wrap or os.environ.get("TAPESCOPE_TEST_WRAP", "ddp")
    model, (inputs, target), loss_fn, _ = build_plain()
    if wrap == "ddp":
        from torch.nn.parallel import DistributedDataParallel
        model = DistributedDataParallel(model, bucket_cap_mb=BUCKET_CAP_MB)
    else:
        from torch.distributed.fsdp import fully_shard
        for block in model.blocks:
            fully_shard(block, reshard_after_forward=wrap == "fsdp")
        fully_shard(model, reshard_after_forward=wrap == "fsdp")
    rank, share = dist.get_rank(), BATCH // dist.get_world_size()
    batch = (inputs[rank * share:(rank + 1) * share], target[rank * share:(rank + 1) * share])
    return model, batch, loss_fn, ClippingAdamW(model.parameters(), lr=1e-2)
