"""The torch recorder: PyTorch's own hooks turned into the same records backend/trace/recorder.py collects.

Four kinds of hook, each with one job, each in its own module:
- a TorchDispatchMode sees every aten op (forward entries and steps; backward and optimizer allocations):
  torch_dispatch.py;
- saved_tensors_hooks see exactly what autograd packs, and when it lets go of it: torch_saves.py;
- module forward pre/post hooks give every op its scope (the module path, e.g. `transformer.h.0.attn`): here;
- pre/post hooks on the grad_fn nodes give the order of the backward sweep, one step per node: torch_sweep.py.
The storage and tensor records they all write are kept by torch_storages.py. A model that checkpoints itself is
watched through checkpoint's own hooks (torch_regions.py), never unpacked.
The attributes (tensors, storages, tape, steps, sweep, values, ...) are what backend.trace.document reads.
"""
import torch
from torch.utils._pytree import MappingKey, SequenceKey, tree_flatten, tree_flatten_with_path

from backend.importers.torch_dispatch import OpRecording
from backend.importers.torch_optimizer_state import state_tensors
from backend.importers.torch_regions import CheckpointRegions
from backend.importers.torch_saves import SavedTensors
from backend.importers.torch_storages import TensorRecords
from backend.importers.torch_sweep import SweepOrder
from backend.trace.records import block_record, step_record

__all__ = ["TorchRecorder", "LOSS_SCOPE"]

LOSS_SCOPE = "loss"         # the scope of the ops loss_fn runs


class TorchRecorder(CheckpointRegions, SweepOrder, SavedTensors, TensorRecords, OpRecording):
    def __init__(self, with_values=False):
        super().__init__()
        self.phase = "setup"
        self.micro_batch = None     # 1..N while a pipeline schedule runs its micro-batches (torch_pipeline), else None
        self.tape, self.steps, self.sweep = [], [], []
        self.dependencies, self.blocks = {}, []
        self.scaler = None          # build_document reads a loss scaler's record; an imported step has none
        self.step = 0
        self._scopes = []
        self._handles = []
        self._busy = 0
        self._freed_in_step = False
        self._init_records(with_values)
        self._init_ops()
        self._init_saves()
        self._init_sweep()
        self._init_regions()

    # ----- steps and phases --------------------------------------------------------------------
    def begin(self, phase, micro_batch=None):
        self.phase, self.micro_batch = phase, micro_batch

    def _new_step(self, entry, **extra):
        """A step of the current phase (and micro-batch: on the step, and on the entry it makes)."""
        self._freed_in_step = False
        self.step = len(self.steps)
        if self.micro_batch is not None:
            extra["micro_batch"] = self.micro_batch
            if entry is not None:
                self.tape[entry].setdefault("micro_batch", self.micro_batch)
        self.steps.append(step_record(self.step, self.phase, entry, **extra))

    @property
    def scope(self):
        return self._scopes[-1] if self._scopes else "model"

    # ----- setup: what exists before the step --------------------------------------------------
    def add_model(self, model, batch_tensors):
        """The batch (a list of tensors, or {name: tensor} from batch_names), parameters and buffers; module hooks."""
        if not isinstance(batch_tensors, dict):
            batch_tensors = {f"batch[{i}]" if len(batch_tensors) > 1 else "batch": t for i, t in enumerate(batch_tensors)}
        for name, t in batch_tensors.items():
            self.tensor(t, "input", name=name, scope="input")
        for name, p in model.named_parameters():
            self.tensor(p, "param", name=name, scope=name.rpartition(".")[0] or "model")
        for name, b in model.named_buffers():
            if self.lookup(b) is None:
                self.tensor(b, "param", name=name, scope=name.rpartition(".")[0] or "model", buffer=True)
        for path, module in model.named_modules():
            self._handles.append(module.register_forward_pre_hook(self._enter(path or "model")))
            self._handles.append(module.register_forward_hook(self._leave))

    def add_optimizer(self, model, optimizer):
        """The optimizer's state the step starts with (after warm-up steps: Adam's exp_avg, exp_avg_sq and step
        per parameter), each named after its parameter, e.g. `blocks.0.up.weight.exp_avg`."""
        if optimizer is None:
            return
        names = {p: name for name, p in model.named_parameters()}
        for p, key, value in state_tensors(optimizer):
            if self.lookup(value) is None:
                name = names.get(p, "param")
                self.tensor(value, "optimizer", name=f"{name}.{key}", scope=name.rpartition(".")[0] or "model")

    def name_optimizer_state(self, model, optimizer):
        """After optimizer.step(): the state it made in this step (a first step's exp_avg, exp_avg_sq, step) is named
        after its parameter, as the state a warm-up left is."""
        names = {p: name for name, p in model.named_parameters()}
        for p, key, value in state_tensors(optimizer):
            uid = self.lookup(value)
            if uid is not None and self.tensors[uid]["kind"] == "optimizer":
                self.tensors[uid]["name"] = f"{names.get(p, 'param')}.{key}"

    def _enter(self, path):
        def enter(module, args):
            self._scopes.append(path)
        return enter

    def _leave(self, module, args, output):
        if self._scopes:
            self._scopes.pop()

    def push_scope(self, path):
        self._scopes.append(path)

    def pop_scope(self):
        self._scopes.pop()

    # ----- which storage enters each block (what a checkpoint of it keeps) ---------------------
    def note_blocks(self, model, paths):
        """Report {path, input_storage} per block in call order, as our engine's driver does."""
        for path in paths:
            self._handles.append(model.get_submodule(path).register_forward_pre_hook(self._block_entered(path)))

    def _block_entered(self, path):
        def entered(module, args):
            inputs = _tensors(args)
            if self.phase != "forward" or not inputs or any(b["path"] == path for b in self.blocks):
                return
            uid = self.known(inputs[0], "activation", None, scope=self.scope)
            self.blocks.append(block_record(path, self.tensors[uid]["storage"]))
        return entered

    # ----- the end -----------------------------------------------------------------------------
    def finish(self):
        self.phase = "done"
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self._node_entry, self._variable_of, self._hooked = {}, {}, set()


def _tensors(tree):
    return [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]


def batch_names(batch):
    """{name: tensor} for a batch's tensors, named as the user's code names them: a dict's by key (`input_ids`),
    a tuple's by position (`batch[0]`, `batch[0].input_ids` inside one), a lone tensor `batch`."""
    leaves = [(path, t) for path, t in tree_flatten_with_path(batch)[0] if isinstance(t, torch.Tensor)]
    if len(leaves) == 1 and not any(isinstance(key, MappingKey) for key in leaves[0][0]):
        return {"batch": leaves[0][1]}
    names = {}
    for path, tensor in leaves:
        name = ""
        for key in path:
            if isinstance(key, MappingKey):
                name += f".{key.key}" if name else str(key.key)
            elif isinstance(key, SequenceKey):
                name += f"[{key.idx}]"
            else:
                name += str(key)            # an attribute of a dataclass or namedtuple: ".pixel_values"
        names["batch" + name if name.startswith(("[", ".")) or not name else name] = tensor
    return names
