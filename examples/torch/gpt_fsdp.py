"""The small GPT of gpt.py under FSDP2 (`fully_shard`), one unit per transformer block and one for the rest
(embeddings, final LayerNorm, the tied head): each rank holds 1/N of every parameter, its gradient and AdamW's
state; a block's parameters are all-gathered before its forward and freed after it (reshard_after_forward=True,
ZeRO-3), all-gathered again for its backward, and its gradients reduce-scattered to their shards.

    .venv/bin/python -m backend.importers.torch examples/torch/gpt_fsdp.py --nproc 2 --warmup 1 --out run.json

gpt_fsdp_keep.py is the same with reshard_after_forward=False (ZeRO-2): the gathered blocks stay until backward."""
import importlib.util
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard

_spec = importlib.util.spec_from_file_location("tapescope_example_gpt", Path(__file__).with_name("gpt.py"))
gpt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpt)

RESHARD_AFTER_FORWARD = True


def rank_slice(tensor):
    rank, world = dist.get_rank(), dist.get_world_size()
    share = tensor.shape[0] // world
    return tensor[rank * share:(rank + 1) * share]


def build(reshard_after_forward=RESHARD_AFTER_FORWARD):
    model, (inputs, target), loss_fn, _ = gpt.build()
    for block in model.transformer.h:
        fully_shard(block, reshard_after_forward=reshard_after_forward)
    fully_shard(model, reshard_after_forward=reshard_after_forward)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)     # over the sharded parameters (DTensors)
    return model, (rank_slice(inputs), rank_slice(target)), loss_fn, optimizer
