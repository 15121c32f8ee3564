"""The small GPT of gpt.py under tensor parallelism (Megatron's split, with torch's parallelize_module) on N ranks,
with sequence parallelism: every rank sees the whole batch; in each block the fused q|k|v projection and the MLP's
up projection are split by output features (ColwiseParallel: each rank computes its own heads and MLP features),
the attention's and the MLP's output projections by input features (RowwiseParallel), their partial sums
reduce-scattered back to each rank's slice of the sequence, on which the LayerNorms and dropouts run
(SequenceParallel; each rank's dropouts too); the embedding and the tied head are split by vocabulary rows, the
logits gathered for the loss.

    .venv/bin/python -m backend.importers.torch examples/torch/gpt_tp.py --nproc 2 --warmup 1 --out run.json
    .venv/bin/python -m backend.importers.torch examples/torch/gpt_tp.py --fake --world-size 2 --warmup 1

The fused q|k|v weight is reordered before it is split (rank r's contiguous rows hold its q, then k, then v heads,
as Megatron lays its linear_qkv out per partition), so each rank's third of its output is its own q, k or v.
TP_SEQUENCE_PARALLEL = False keeps the residual stream whole on every rank (tensor parallelism alone)."""
import importlib.util
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, PrepareModuleOutput,
                                               RowwiseParallel, SequenceParallel, parallelize_module)

_spec = importlib.util.spec_from_file_location("tapescope_example_gpt", Path(__file__).with_name("gpt.py"))
gpt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpt)

TP_SEQUENCE_PARALLEL = True


def per_rank_qkv(linear, world):
    """Reorder a fused [q | k | v] projection's output features to [q₀ k₀ v₀ | q₁ k₁ v₁ | …], rank by rank."""
    with torch.no_grad():
        for tensor in (linear.weight, linear.bias):
            q, k, v = tensor.chunk(3, dim=0)
            parts = [torch.cat([t.chunk(world, dim=0)[r] for t in (q, k, v)]) for r in range(world)]
            tensor.copy_(torch.cat(parts))


def block_plan(sequence_parallel):
    if not sequence_parallel:
        return {"attn.c_attn": ColwiseParallel(), "attn.c_proj": RowwiseParallel(),
                "mlp.c_fc": ColwiseParallel(), "mlp.c_proj": RowwiseParallel()}
    return {"ln_1": SequenceParallel(), "attn": PrepareModuleInput(input_layouts=(Shard(1),),
                                                                   desired_input_layouts=(Replicate(),)),
            "attn.c_attn": ColwiseParallel(), "attn.c_proj": RowwiseParallel(output_layouts=Shard(1)),
            "ln_2": SequenceParallel(), "mlp": PrepareModuleInput(input_layouts=(Shard(1),),
                                                                  desired_input_layouts=(Replicate(),)),
            "mlp.c_fc": ColwiseParallel(), "mlp.c_proj": RowwiseParallel(output_layouts=Shard(1))}


def build(sequence_parallel=TP_SEQUENCE_PARALLEL):
    model, batch, loss_fn, _ = gpt.build()
    world = dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("tp",))
    for block in model.transformer.h:
        per_rank_qkv(block.attn.c_attn, world)
        parallelize_module(block, mesh, block_plan(sequence_parallel))
    layout = Shard(1) if sequence_parallel else Replicate()
    plan = {"transformer.wte": RowwiseParallel(input_layouts=Replicate(), output_layouts=layout),
            "lm_head": ColwiseParallel(input_layouts=layout, output_layouts=Replicate())}
    if sequence_parallel:       # the positions' table is whole on every rank; each adds its slice of the sequence
        plan["transformer.wpe"] = PrepareModuleOutput(output_layouts=Replicate(), desired_output_layouts=Shard(0))
        plan["transformer.ln_f"] = SequenceParallel()
    parallelize_module(model, mesh, plan)
    model.lm_head.weight = model.transformer.wte.weight        # tied again, both split by vocabulary rows
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    return model, batch, loss_fn, optimizer
