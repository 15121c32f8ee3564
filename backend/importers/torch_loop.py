"""Recording one step of the user's own training loop: `with recording(model, optimizer, step=K) as run:`.

    from backend.importers.torch_loop import recording

    with recording(model, optimizer, step=2, out="run.json") as run:
        for inputs, target in loader:
            loss = loss_fn(model(inputs), target)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    run.document        # the trace document of step 2 (the third), also written to run.json

Steps are counted by `optimizer.step()` calls (by backward calls without an optimizer), from 0: step=K records
the step that starts after K have completed, as `--warmup K` does. The recorded step runs from the model's next
forward to the end of its `optimizer.step()`: the forward begins under the recorder's hooks (torch_step.record's
hooks, entered in the model's forward pre-hook), the first backward call attaches the graph (torch.autograd.backward
is wrapped while the block runs; loss.backward() goes through it), and the optimizer's step post-hook builds the
document. The loop itself is not changed: every other step runs as without the block, and the recorded one
computes what it would have. One backward per optimizer step: under gradient accumulation, the
recorded step's later micro-batches land in its backward phase.
"""
from contextlib import ExitStack, contextmanager

import torch
from torch.profiler import ProfilerActivity, profile

from backend.importers.mistakes import StepError
from backend.importers.torch_blocks import find_blocks
from backend.importers.torch_recorder import TorchRecorder, batch_names
from backend.importers.torch_regions import watching_checkpoints
from backend.importers.torch_profile import allocation_events, collector_paused
from backend.importers.torch_step import add_workspace, document_of, write_run


@contextmanager
def recording(model, optimizer=None, step=0, out="run.json", values=False, blocks=None):
    """Within: the loop's step number `step` (0 is the first) is recorded; `run.document` is its trace document,
    written to `out` (None: not written) when that step's optimizer.step() returns. A loop that ends first raises
    a StepError saying how many steps it ran."""
    if not isinstance(step, int) or step < 0:
        raise StepError(f"recording(step={step!r}): give the number of the step to record, a whole number from 0 "
                        "(0 is the loop's first step)")
    run = LoopRecording(model, optimizer, step, out, values, blocks)
    with run.hooked():
        yield run
    if run.document is None:
        raise StepError(f"the loop ran {run.completed} step{'s' if run.completed != 1 else ''}, so step={step} "
                        f"was never reached: give recording() a step below {run.completed} or run the loop longer")


class LoopRecording:
    """One recorded step of a running loop: counts steps, starts the recorder at the step's first forward, hands
    it the loss at the first backward and builds the document at the optimizer's step."""

    def __init__(self, model, optimizer, step, out, values, blocks):
        self.model, self.optimizer, self.step, self.out = model, optimizer, step, out
        self.values, self.blocks = values, blocks
        self.completed = 0              # steps the loop has finished
        self.document = None
        self.recorder, self.loss, self.batch = None, None, None
        self._hooks = ExitStack()       # the recorder's modes and saved-tensor hooks while the step runs

    @contextmanager
    def hooked(self):
        handles = [self.model.register_forward_pre_hook(self._forward_begins, with_kwargs=True)]
        if self.optimizer is not None:
            handles += [self.optimizer.register_step_pre_hook(self._optimizer_begins),
                        self.optimizer.register_step_post_hook(self._optimizer_ends)]
        backward = torch.autograd.backward
        torch.autograd.backward = self._backward(backward)
        try:
            yield
        finally:
            torch.autograd.backward = backward
            for handle in handles:
                handle.remove()
            if self.recorder is not None and self.document is None:    # the loop stopped inside the step
                self._hooks.close()
                self.recorder.finish()

    @property
    def recording(self):
        return self.recorder is not None and self.document is None

    def _forward_begins(self, module, args, kwargs):
        if self.recorder is not None or self.completed != self.step:
            return
        self.batch = (args, kwargs) if kwargs else args
        recorder = self.recorder = TorchRecorder(with_values=self.values)
        self._profile = None        # torch.profiler's memory events give the workspace, as record_step's do
        if not torch._C._autograd._profiler_enabled():      # the collector paused, as profiled() pauses it
            self._hooks.enter_context(collector_paused())
            self._profile = self._hooks.enter_context(profile(activities=[ProfilerActivity.CPU], profile_memory=True))
        recorder.add_model(self.model, batch_names(kwargs if kwargs and not args else self.batch))
        recorder.add_optimizer(self.model, self.optimizer)
        recorder.note_blocks(self.model, find_blocks(self.model) if self.blocks is None else self.blocks)
        self._hooks.enter_context(recorder)
        self._hooks.enter_context(torch.autograd.graph.saved_tensors_hooks(recorder.pack, recorder.unpack))
        self._hooks.enter_context(watching_checkpoints(recorder))
        recorder.begin("forward")

    def _backward(self, backward):
        def recorded_backward(tensors, *args, **kwargs):
            if not self.recording or self.recorder.phase != "forward":
                result = backward(tensors, *args, **kwargs)
                if self.optimizer is None and not self.recording:
                    self.completed += 1
                return result
            self.loss = tensors if isinstance(tensors, torch.Tensor) else tensors[0]
            self.recorder.attach(self.loss)
            self.recorder.begin("backward")
            result = backward(tensors, *args, **kwargs)
            self.recorder.name_grads(self.model)
            if self.optimizer is None:
                self._finish()
            return result
        return recorded_backward

    def _optimizer_begins(self, optimizer, args, kwargs):
        if self.recording and self.recorder.phase == "backward":
            self.recorder.begin("optimizer")

    def _optimizer_ends(self, optimizer, args, kwargs):
        if self.recording and self.recorder.phase == "optimizer":
            self.recorder.name_optimizer_state(self.model, self.optimizer)
            self._finish()
        else:
            self.completed += 1

    def _finish(self):
        """The recorded step is over: its hooks come off and its document is built (and written)."""
        recorder = self.recorder
        recorder.begin("done")
        self._hooks.close()
        recorder.finish()
        self.completed += 1
        measured_peak = add_workspace(recorder, allocation_events(self._profile)) if self._profile else None
        document = document_of(recorder, self.loss, self.model, self.batch, None, self.optimizer)
        document["summary"]["measured_peak_bytes"] = measured_peak
        document["source"].update(loop_step=self.step, warmup_steps=self.step)
        self.document = document
        if self.out is not None:
            write_run(document, self.out)
