"""The small GPT of gpt.py as a 2-stage pipeline (torch.distributed.pipelining): rank 0 holds the embeddings and
the first half of the blocks, rank 1 the second half, the final LayerNorm, the head and the loss. Schedule1F1B runs
the global batch of 8 sequences as 4 micro-batches of 2: rank 0 runs two forwards before its first backward, so it
holds two micro-batches' activations at once; rank 1, the last stage, runs each backward right after its forward
and holds one. Activations cross between the stages as send/recv on the tape.

    .venv/bin/python -m backend.importers.torch examples/torch/gpt_pipeline.py --nproc 2 --warmup 1 --out run.json

Without the hardware, each stage on torch's fake process group (one command per stage, --rank 0 and --rank 1):

    .venv/bin/python -m backend.importers.torch examples/torch/gpt_pipeline.py --fake --world-size 2 --rank 1 --warmup 1

There the stages are given their shapes (example_tensors): torch otherwise infers them at the first step by sending
them from stage to stage (recv_object_list), which a fake group cannot answer. A real run leaves it to torch.

The head is not tied to the embedding here: the two live on different stages (Megatron keeps a copy of the
embedding on the last stage and all-reduces their gradients; this example keeps them apart).
A pipeline's build() returns the schedule where a loss_fn goes: its loss_fn is the schedule's."""
import importlib.util
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.pipelining import PipelineStage, Schedule1F1B

_spec = importlib.util.spec_from_file_location("tapescope_example_gpt", Path(__file__).with_name("gpt.py"))
gpt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpt)

MICRO_BATCHES = 4


class FirstStage(nn.Module):
    """Token and position embeddings, then the first half of the blocks."""

    def __init__(self, model, blocks):
        super().__init__()
        self.wte, self.wpe, self.drop = model.transformer.wte, model.transformer.wpe, model.transformer.drop
        self.h = blocks

    def forward(self, idx):
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(positions))
        for block in self.h.values():
            x = block(x)
        return x


class LastStage(nn.Module):
    """The second half of the blocks, the final LayerNorm and the head: the logits the loss reads."""

    def __init__(self, model, blocks):
        super().__init__()
        self.h = blocks
        self.ln_f, self.lm_head = model.transformer.ln_f, model.lm_head

    def forward(self, x):
        for block in self.h.values():
            x = block(x)
        return self.lm_head(self.ln_f(x))


class MiddleStage(nn.Module):
    """Only blocks (a pipeline of more than 2 stages)."""

    def __init__(self, model, blocks):
        super().__init__()
        self.h = blocks

    def forward(self, x):
        for block in self.h.values():
            x = block(x)
        return x


def stage_module(model, stage, stages):
    """This stage's part of the model (the blocks split evenly, each under its number in the whole model: rank 1's
    first block is `h.2`), the head untied from the embedding."""
    model.lm_head.weight = nn.Parameter(model.lm_head.weight.detach().clone())
    per_stage = len(model.transformer.h) // stages
    mine = nn.ModuleDict({str(i): model.transformer.h[i] for i in range(stage * per_stage, (stage + 1) * per_stage)})
    kind = FirstStage if stage == 0 else LastStage if stage == stages - 1 else MiddleStage
    return kind(model, mine)


def example_tensors(stage, stages):
    """What a stage takes and gives for one micro-batch (2 sequences of 64 tokens), as PipelineStage's input_args
    and output_args: token ids into the first stage, activations of width 256 between stages (requiring grad: their
    gradients go back), logits out of the last."""
    rows = gpt.BATCH // MICRO_BATCHES
    activation = torch.empty(rows, gpt.SEQ, gpt.WIDTH, requires_grad=True)
    inputs = torch.zeros(rows, gpt.SEQ, dtype=torch.long) if stage == 0 else activation
    outputs = torch.empty(rows, gpt.SEQ, gpt.VOCAB, requires_grad=True) if stage == stages - 1 else activation
    return {"input_args": inputs, "output_args": outputs}


def build():
    model, (inputs, target), loss_fn, _ = gpt.build()
    stage, stages = dist.get_rank(), dist.get_world_size()
    module = stage_module(model, stage, stages)
    shapes = example_tensors(stage, stages) if dist.get_backend() == "fake" else {}
    schedule = Schedule1F1B(PipelineStage(module, stage, stages, torch.device("cpu"), **shapes),
                            n_microbatches=MICRO_BATCHES, loss_fn=loss_fn)
    optimizer = torch.optim.AdamW(module.parameters(), lr=3e-4)
    return {"model": module, "batch": (inputs, target), "schedule": schedule, "optimizer": optimizer}
