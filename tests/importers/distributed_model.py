"""The distributed tests' model: 4 pre-LN residual MLP blocks (no dropout, so every rank and a single process compute
the same step), built plain, under DDP (small buckets), under DDP with ZeroRedundancyOptimizer (ZeRO-1: AdamW's
state sharded), under FSDP2 per block (resharding after forward or not), with each block's MLP tensor-parallel (up
by columns, down by rows), or tensor + sequence parallel (the LayerNorms and the head on each rank's slice of the
sequence, gathered for up and reduce-scattered back after down); a MODEL_FILE for the command line too
(TAPESCOPE_TEST_WRAP picks the wrapping)."""
import os

import torch
from torch import nn
from torch.nn import functional as F

WIDTH, HIDDEN, BLOCKS, BATCH, SEQ = 32, 128, 4, 8, 4
BUCKET_CAP_MB = 0.02           # 20,971 B: the 4 blocks' 134 kB of gradients in several buckets
WRAPS = ("ddp", "zero1", "fsdp", "fsdp_keep", "tp", "tp_sp")
REPLICATED = ("ddp", "zero1")    # every rank holds the whole model (DDP)
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


def optimizer_for(wrap, model, sharded=False):
    if wrap in ("tp", "tp_sp"):     # plain and DTensor parameters mixed: foreach kernels and clip_grad_norm_ refuse
        return torch.optim.AdamW(model.parameters(), lr=1e-2, foreach=False)
    if wrap == "zero1":     # each rank steps the parameters it owns (a clip there would see only their norm)
        if not sharded:
            return torch.optim.AdamW(model.parameters(), lr=1e-2)
        from torch.distributed.optim import ZeroRedundancyOptimizer
        return ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-2)
    return ClippingAdamW(model.parameters(), lr=1e-2)


def build_plain(wrap="ddp"):
    """(model, (inputs, target), loss_fn, optimizer) of the whole global batch, in one process (the optimizer the
    wrapped run uses)."""
    torch.manual_seed(0)
    model = Tiny()
    inputs, target = torch.randn(BATCH, SEQ, WIDTH), torch.randn(BATCH, SEQ, 1)
    return model, (inputs, target), F.mse_loss, optimizer_for(wrap, model)


def build(wrap=None):
    """This rank's step: the same model and global batch on every rank, wrapped, and the rank's slice of the batch."""
    import torch.distributed as dist
    wrap = wrap or os.environ.get("TAPESCOPE_TEST_WRAP", "ddp")
    model, (inputs, target), loss_fn, _ = build_plain()
    rank, share = dist.get_rank(), BATCH // dist.get_world_size()
    if wrap == "tp":        # Megatron's MLP split: up by columns, down by rows; every rank sees the whole batch
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
        mesh = init_device_mesh("cpu", (dist.get_world_size(),), mesh_dim_names=("tp",))
        for block in model.blocks:
            parallelize_module(block, mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
        return model, (inputs, target), loss_fn, optimizer_for(wrap, model)
    if wrap == "tp_sp":     # Megatron's sequence parallel: what runs token by token runs on this rank's tokens
        return sequence_parallel(model, inputs, target, rank)
    if wrap in REPLICATED:
        from torch.nn.parallel import DistributedDataParallel
        model = DistributedDataParallel(model, bucket_cap_mb=BUCKET_CAP_MB)
    else:
        from torch.distributed.fsdp import fully_shard
        for block in model.blocks:
            fully_shard(block, reshard_after_forward=wrap == "fsdp")
        fully_shard(model, reshard_after_forward=wrap == "fsdp")
    batch = (inputs[rank * share:(rank + 1) * share], target[rank * share:(rank + 1) * share])
    return model, batch, loss_fn, optimizer_for(wrap, model, sharded=True)


def sequence_parallel(model, inputs, target, rank):
    """Tensor + sequence parallel: each LayerNorm (and the head) on this rank's slice of the sequence (Shard(1)),
    all-gathered into up (by columns), down's partial sums reduce-scattered back to the slice (by rows); the loss
    over the gathered output, so it is the whole batch's."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, SequenceParallel, parallelize_module
    world = dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("tp",))
    for block in model.blocks:
        parallelize_module(block, mesh, {"ln": SequenceParallel(), "up": ColwiseParallel(input_layouts=Shard(1)),
                                         "down": RowwiseParallel(output_layouts=Shard(1))})
    parallelize_module(model.head, mesh, SequenceParallel())
    share = SEQ // world
    return model, (inputs[:, rank * share:(rank + 1) * share], target), gathered_mse, optimizer_for("tp_sp", model)


def gathered_mse(output, target):
    return F.mse_loss(output.full_tensor(), target)
