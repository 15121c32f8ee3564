"""The small GPT of gpt.py under DistributedDataParallel: every rank holds the whole model and trains on its slice
of the global batch of 8 sequences; DDP all-reduces the gradients in buckets of at most 1 MB (bucket_cap_mb=1:
the 3.2 M-parameter model's 12.8 MB of gradients in about a dozen buckets, launched during backward as each fills).

    .venv/bin/python -m backend.importers.torch examples/torch/gpt_ddp.py --nproc 2 --warmup 1 --out run.json
    torchrun --nproc-per-node 2 -m backend.importers.torch examples/torch/gpt_ddp.py --warmup 1 --out run.json

DDP's first step runs with one bucket of everything; it rebuilds its buckets from the order the gradients became
ready at the second step's forward: --warmup 1 records the buckets every later step uses."""
import importlib.util
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

_spec = importlib.util.spec_from_file_location("tapescope_example_gpt", Path(__file__).with_name("gpt.py"))
gpt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpt)

BUCKET_CAP_MB = 1


def rank_slice(tensor):
    """This rank's share of the global batch (the same seed on every rank: the same global batch)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    share = tensor.shape[0] // world
    return tensor[rank * share:(rank + 1) * share]


def build():
    model, (inputs, target), loss_fn, _ = gpt.build()
    model = DistributedDataParallel(model, bucket_cap_mb=BUCKET_CAP_MB)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    return model, (rank_slice(inputs), rank_slice(target)), loss_fn, optimizer
