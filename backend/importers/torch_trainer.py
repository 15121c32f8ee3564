"""Recording step K of a Hugging Face `Trainer.train()`: a TrainerCallback over torch_loop's LoopRecording.

    from backend.importers.torch_trainer import RecordingCallback

    trainer = Trainer(model, args, train_dataset=data, callbacks=[RecordingCallback(step=2, out="run.json")])
    trainer.train()

Steps count the optimizer's steps from 0, as `recording(..., step=K)` does (state.global_step before the step).
The callback hooks the model and the torch optimizer inside Accelerate's wrapper when training begins and lets go
when it ends; what Trainer does between backward and optimizer.step() (gradient clipping, the loss it logs) lands
in the recorded step's backward phase. A model with gradient checkpointing on (TrainingArguments
gradient_checkpointing=True, or model.gradient_checkpointing_enable()) is recorded as torch_regions.py describes.
"""
from transformers import TrainerCallback

from backend.importers.mistakes import StepError
from backend.importers.torch_loop import LoopRecording


class RecordingCallback(TrainerCallback):
    """Records optimizer step `step` of the training run; `document` is its trace document, written to `out`."""

    def __init__(self, step=0, out="run.json", values=False, blocks=None):
        self.step, self.out, self.values, self.blocks = step, out, values, blocks
        self.run, self._hooked = None, None

    @property
    def document(self):
        return self.run.document if self.run is not None else None

    def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
        optimizer = getattr(optimizer, "optimizer", optimizer)     # Accelerate's AcceleratedOptimizer wraps torch's
        self.run = LoopRecording(model, optimizer, self.step - state.global_step, self.out, self.values, self.blocks)
        self._hooked = self.run.hooked()
        self._hooked.__enter__()

    def on_train_end(self, args, state, control, **kwargs):
        if self._hooked is not None:
            self._hooked.__exit__(None, None, None)
            self._hooked = None
        if self.document is None:
            raise StepError(f"training ran {state.global_step} optimizer steps, so step={self.step} was never "
                            f"recorded: give RecordingCallback a step below {state.global_step} or train longer")
