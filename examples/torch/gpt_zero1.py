"""The small GPT of gpt.py under DDP with ZeroRedundancyOptimizer (ZeRO-1): every rank holds the whole model and
its whole gradients (DDP all-reduces them in 1 MB buckets, as in gpt_ddp.py), but AdamW's two moments only for the
parameters it owns, about 1/N of them; after its step each rank broadcasts the parameters it updated to the others.
The optimizer state, 8 B/param of the 16 B/param stack, is what ZeRO-1 shards.

    .venv/bin/python -m backend.importers.torch examples/torch/gpt_zero1.py --nproc 2 --warmup 1 --out run.json"""
import importlib.util
from pathlib import Path

import torch
from torch.distributed.optim import ZeroRedundancyOptimizer

_spec = importlib.util.spec_from_file_location("tapescope_example_gpt_ddp", Path(__file__).with_name("gpt_ddp.py"))
gpt_ddp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpt_ddp)


def build():
    model, batch, loss_fn, _ = gpt_ddp.build()
    optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=3e-4)
    return model, batch, loss_fn, optimizer
