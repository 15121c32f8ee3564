"""A pipeline-parallel step (torch.distributed.pipelining): build() gives this rank's stage module and a schedule
(Schedule1F1B, ScheduleGPipe: one stage per rank) where a loss_fn goes, and the step is `schedule.step(...)`, which
splits the batch into micro-batches and runs their forwards and backwards in the schedule's order, sending
activations to the next stage and gradients to the previous one.

Recorded, each micro-batch's forward and backward is its own run of steps (phase and `micro_batch` on every step and
entry): the stage's `forward_one_chunk` and `backward_one_chunk` are wrapped for the step, and before a micro-batch's
backward its graph is attached from what that backward starts from (the stage's outputs; the loss on the last
stage), so the sweep is one node per step as in any step. The receive posted before a forward or backward belongs to
that micro-batch's phase. What the schedule holds between a micro-batch's forward and its backward is then on the
tape as it happened: under 1F1B, the first of P stages runs P forwards before its first backward and holds P
micro-batches' activations at once, the last stage one."""
import contextlib
import sys

import torch

from backend.importers.mistakes import StepError
from backend.importers.torch_recorder import LOSS_SCOPE

SCHEDULES = "torch.distributed.pipelining.schedules"


def is_schedule(value):
    """Whether build() gave a pipeline schedule (where a loss_fn goes). A schedule is made by code that imported
    torch.distributed.pipelining, so its module is loaded by then; it is not imported here (with torch._dynamo,
    which it imports, ~1 CPU-s of the start of every command and torchrun rank)."""
    schedules = sys.modules.get(SCHEDULES)
    return schedules is not None and isinstance(value, schedules._PipelineSchedule)


def stage_of(schedule):
    """The one stage this rank runs; a schedule of several stages per rank is refused in a sentence."""
    if not isinstance(schedule, sys.modules[SCHEDULES].PipelineScheduleSingle):
        raise StepError(f"{type(schedule).__name__} runs several stages per rank, which is not recorded yet: use a "
                        "schedule of one stage per rank (Schedule1F1B or ScheduleGPipe)")
    return schedule._stage


def describe_pipeline(schedule):
    """The document's `source.pipeline`: the schedule, this rank's stage, how many stages and micro-batches."""
    stage = stage_of(schedule)
    return {"schedule": type(schedule).__name__, "stage": stage.stage_index, "stages": stage.num_stages,
            "micro_batches": schedule._n_microbatches}


def add_receive_buffers(recorder, schedule):
    """The stage's receive buffers, which exist before a step after the first (torch makes them at the schedule's
    first step, one per micro-batch each way, and keeps them): activations from the previous stage and gradients from
    the next, as storages the step starts with, named after the micro-batch they receive for."""
    stage = stage_of(schedule)
    for what, kind, infos in (("activation", "activation", stage.args_recv_info),
                              ("grad", "grad", stage.grad_recv_info)):
        for chunk, received in sorted(infos.items()):
            for info in received if isinstance(received, (tuple, list)) else (received,):
                buffer = getattr(info, "buffer", None)
                if isinstance(buffer, torch.Tensor) and recorder.lookup(buffer) is None:
                    recorder.tensor(buffer, kind, name=f"recv.{what}[{chunk + 1}]", scope="pipeline")


def run_schedule(schedule, batch, recorder=None):
    """One schedule.step over the whole batch, (inputs, target): the first stage feeds the inputs, the last the
    target. Returns the mean of the micro-batches' losses on the last stage (None elsewhere: its loss is another
    rank's). The outputs are not kept (return_outputs=False, as a training loop that logs only the loss)."""
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise StepError("with a pipeline schedule, batch must be (inputs, target): the first stage feeds the inputs "
                        "to schedule.step, the last stage the target")
    stage = stage_of(schedule)
    inputs, target = batch
    args = (inputs if isinstance(inputs, (tuple, list)) else (inputs,)) if stage.is_first else ()
    losses = [] if stage.is_last else None
    followed = following_micro_batches(schedule, stage, recorder) if recorder else contextlib.nullcontext()
    with followed:
        schedule.step(*args, target=target if stage.is_last else None, losses=losses, return_outputs=False)
    if not losses:
        return None
    return torch.stack([loss.detach() for loss in losses]).mean()


@contextlib.contextmanager
def following_micro_batches(schedule, stage, recorder):
    """While the schedule steps, each micro-batch's work is phased and numbered, and each backward's graph attached."""
    wrapped = {
        "forward_one_chunk": lambda run: _in_phase(recorder, "forward", run),
        "get_fwd_recv_ops": lambda run: _in_phase(recorder, "forward", run),
        "get_bwd_recv_ops": lambda run: _in_phase(recorder, "backward", run),
        "backward_one_chunk": lambda run: _backward(recorder, stage, run),
    }
    for name, wrap in wrapped.items():
        setattr(stage, name, wrap(getattr(stage, name)))
    compute_loss = schedule._compute_loss
    schedule._compute_loss = _scoped(recorder, compute_loss)
    try:
        yield
    finally:
        for name in wrapped:
            delattr(stage, name)            # the class's own methods again
        del schedule._compute_loss


def _in_phase(recorder, phase, run):
    def phased(chunk, *args, **kwargs):
        recorder.begin(phase, chunk + 1)
        return run(chunk, *args, **kwargs)
    return phased


def _backward(recorder, stage, run):
    def backward(chunk, loss=None, *args, **kwargs):
        recorder.begin("backward", chunk + 1)
        outputs = [loss] if stage.is_last else [t for t in stage.fwd_cache[chunk][0] if isinstance(t, torch.Tensor)]
        recorder.attach(*[t for t in outputs if t is not None and t.grad_fn is not None])
        return run(chunk, loss, *args, **kwargs)
    return backward


def _scoped(recorder, compute_loss):
    def scoped(*args, **kwargs):
        recorder.push_scope(LOSS_SCOPE)
        try:
            return compute_loss(*args, **kwargs)
        finally:
            recorder.pop_scope()
    return scoped
