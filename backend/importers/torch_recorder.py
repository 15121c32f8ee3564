"""The torch recorder: PyTorch's own hooks turned into the same records backend/trace/recorder.py collects.

Four kinds of hook, each with one job:
- a TorchDispatchMode sees every aten op (forward entries and steps; backward and optimizer allocations);
- saved_tensors_hooks see exactly what autograd packs, and when it lets go of it;
- module forward pre/post hooks give every op its scope (the module path, e.g. `transformer.h.0.attn`);
- pre/post hooks on the grad_fn nodes give the order of the backward sweep, one step per node.
A model that checkpoints itself is watched through checkpoint's own hooks (torch_regions.py), never unpacked.
Storages are keyed by untyped_storage().data_ptr() while alive (views share them); a weakref finalizer on
the storage object says when the allocator gets it back, so `freed` is the step during which it went.
The attributes (tensors, storages, tape, steps, sweep, values, ...) are what backend.trace.document reads.
"""
import functools
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from backend.importers.torch_ops import TAPESCOPE, aten_name, family, flops, op_name, op_tensors, written_arguments
from backend.importers.torch_regions import CheckpointRegions
from backend.trace.values import ValueTable

SMALL_TENSOR_ELEMENTS = 1024      # with --values, tensors this small carry their values (heatmaps)
_next_sequence_nr = torch._C._autograd._get_sequence_nr


class Packed:
    """What saved_tensors_hooks hand autograd: the tensor itself plus who we are; its death is the release."""
    __slots__ = ("tensor", "uid", "recorder", "__weakref__")

    def __init__(self, tensor, uid, recorder):
        self.tensor, self.uid, self.recorder = tensor, uid, recorder

    def __del__(self):
        recorder = self.recorder
        if recorder is not None and recorder.phase != "done":
            recorder.on_release(self.uid)


class TorchRecorder(CheckpointRegions, TorchDispatchMode):
    def __init__(self, with_values=False):
        super().__init__()
        self.with_values = with_values
        self.phase = "setup"
        self.values = ValueTable()
        self.tensors = {}           # id -> tensor record
        self.storages = {}          # storage id -> storage record (each allocation its own, addresses reused)
        self.tape, self.steps, self.sweep = [], [], []
        self.dependencies, self.blocks = {}, []
        self.scaler = None          # build_document reads a loss scaler's record; an imported step has none
        self.step = 0
        self.packed = []            # (tensor id, storage id) of every pack, in order
        self._live = {}             # data_ptr -> storage record, while the allocator has it
        self._views = {}            # (data_ptr, offset, shape, stride, dtype) -> latest tensor id
        self._entry_of_seq = {}     # autograd sequence_nr -> tape index
        self._last_seq = _next_sequence_nr()
        self._awaiting_output = {}  # sequence_nr of a node made between ops (a custom Function's) -> next tape index
        self._scopes = []
        self._probe = None          # the tape index whose node's _saved_* attributes are being read
        self._node_entry = {}       # grad_fn node -> tape index (None for AccumulateGrad)
        self._variable_of = {}      # AccumulateGrad node -> the leaf it accumulates into
        self._handles = []
        self._holding = {}          # storage id -> Tensors over it still alive (forward storages only)
        self._watching = []         # a weakref per storage: its callback is the storage's death
        self._described = {}        # _sequence(tensor) -> (version, the description it was given)
        self._writes = {}           # storage id -> how many ops have written into it (see _wrote)
        self._busy = 0
        self._freed_in_step = False
        self._init_regions()

    # ----- steps and phases ---------------------------------------------------------------------
    def begin(self, phase):
        self.phase = phase

    def _new_step(self, entry, **extra):
        self._freed_in_step = False
        self.step = len(self.steps)
        self.steps.append({"index": self.step, "phase": self.phase, "entry": entry, **extra})

    @property
    def scope(self):
        return self._scopes[-1] if self._scopes else "model"

    # ----- storages and tensors -----------------------------------------------------------------
    def _storage(self, tensor, kind, scope=None):
        storage = tensor.untyped_storage()
        ptr = storage.data_ptr()
        record = self._live.get(ptr) if ptr else None
        if record is None:
            record = {"id": len(self.storages), "address": f"0x{ptr:x}", "nbytes": int(storage.nbytes()),
                      "kind": kind, "born": self.step, "freed": None, "dropped": None, "setup": self.phase == "setup"}
            if scope:
                record["scope"] = scope
            self.storages[record["id"]] = record
            if ptr:
                self._live[ptr] = record
                self._watching.append(weakref.ref(storage, self._freed_callback(ptr, record["id"])))
        return record

    def _freed_callback(self, ptr, storage_id):
        return lambda _ref: self._on_storage_freed(ptr, storage_id)

    def _on_storage_freed(self, ptr, storage_id):
        record = self.storages[storage_id]
        if self._live.get(ptr) is record:
            del self._live[ptr]
        if self.phase != "done" and record["freed"] is None:
            record["freed"] = self.step
            self._freed_in_step = True

    @staticmethod
    def _key(tensor):
        """A tensor's layout: storage, offset, shape, strides, dtype (torch.Size and stride() are tuples)."""
        return (tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tensor.shape, tensor.stride(),
                tensor.dtype)

    def lookup(self, tensor, key=None):
        """The id of the tensor record `tensor` is (or a view with its exact layout is); None if unseen."""
        uid = self._views.get(key or self._key(tensor))
        if uid is not None and self.storages[self.tensors[uid]["storage"]]["freed"] is None:
            return uid
        return None

    def tensor(self, tensor, kind, name=None, produced_by=None, scope=None, key=None, **extra):
        """A new tensor record over `tensor`'s storage (created when the storage is new)."""
        key = key or self._key(tensor)
        known = key[0] in self._live
        storage = self._storage(tensor, kind, scope if kind in ("param", "input") else None)
        uid = len(self.tensors)
        record = {"id": uid, "name": name or f"t{uid}", "kind": storage["kind"], "shape": list(tensor.shape),
                  "dtype": _dtype_name(tensor.dtype), "nbytes": storage["nbytes"],
                  "storage": storage["id"], "address": storage["address"], "born": self.step, "freed": None,
                  "saved_by": [], "produced_by": produced_by, "scope": scope, **extra}
        if known and kind not in ("param", "input"):
            record["view"] = True
        self.tensors[uid] = record
        self._views[key] = uid
        self._describe(record, tensor)
        self._watch_drop(tensor, storage)
        return uid

    def _describe(self, target, tensor, with_values=None):
        """Statistics (and, with --values, the values of small tensors), read from the tensor at birth."""
        dtype = tensor.dtype
        unreadable = dtype.is_complex or tensor.is_meta
        if with_values is None:                 # a tensor record: its description lives under "value"
            if unreadable:
                return
            target["value"] = {}
            target, with_values = target["value"], self.with_values
        elif unreadable:
            target.update(min=None, max=None, mean=None, norm=None)
            return
        # .data is not an op (no trip through __torch_dispatch__), but it is a new tensor: only where numpy() needs it
        data = tensor.data if tensor.requires_grad else tensor
        self._busy += 1             # numpy() may detach (an op) a tensor autograd is packing
        try:
            if dtype in _WIDENED or not data.is_cpu:
                data = data.float().cpu()
            array = data.numpy()
        finally:
            self._busy -= 1
        with_values = with_values and array.size <= SMALL_TENSOR_ELEMENTS
        sequence, version = self._sequence(tensor, with_values)
        described = self._described.get(sequence)
        if described is not None and described[0] == version:
            self.values.add_same(target, described[1])
            return
        if with_values:
            self.values.add(target, array, True)
        else:
            self.values.add_statistics(target, array)
        if sequence is not None:
            self._described[sequence] = (version, target)

    def _sequence(self, tensor, with_values):
        """(what identifies the values `tensor` reads, in order, and its version): a contiguous tensor by its
        storage, offset and length, any other by its layout; the version counts the ops that wrote into the
        storage (tensor._version is bumped above the dispatch mode, after an op returns, and not at all for a
        composite's in-place parts). A second tensor with the same (a view that reshapes, a gradient already
        seen) and the same version holds the same values: described once."""
        record = self._live.get(tensor.untyped_storage().data_ptr())
        if record is None:
            return None, None
        version = self._writes.get(record["id"], 0)
        if tensor.is_contiguous():
            return (record["id"], tensor.storage_offset(), tensor.numel(), tensor.dtype, with_values), version
        return (record["id"], tensor.storage_offset(), tensor.shape, tensor.stride(), tensor.dtype, with_values), version

    def known(self, tensor, kind, name, scope=None):
        key = self._key(tensor)
        uid = self.lookup(tensor, key)
        return uid if uid is not None else self.tensor(tensor, kind, name, scope=scope, key=key)

    # ----- setup: what exists before the step --------------------------------------------------
    def add_model(self, model, batch_tensors):
        for i, t in enumerate(batch_tensors):
            self.tensor(t, "input", name=f"batch[{i}]" if len(batch_tensors) > 1 else "batch", scope="input")
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
        for group in optimizer.param_groups:
            for p in group["params"]:
                name = names.get(p, "param")
                for key, value in optimizer.state.get(p, {}).items():
                    if isinstance(value, torch.Tensor) and self.lookup(value) is None:
                        self.tensor(value, "optimizer", name=f"{name}.{key}", scope=name.rpartition(".")[0] or "model")

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

    # ----- every aten op ------------------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self._busy or self.phase in ("setup", "done") or func in _MARKERS:
            return func(*args, **kwargs)
        if self.phase == "forward":
            return self._forward_op(func, args, kwargs)
        if self.phase == "recompute":
            return self.recompute_op(func, args, kwargs)
        if self.phase == "optimizer":
            self._new_step(None, op=op_name(func))
        elif self._freed_in_step and self.steps:
            # A node freed a buffer before this op allocates: a step of its own keeps the two apart, so a
            # step's live bytes are what was held together at one moment (as in the engine's recompute steps).
            self._new_step(self.steps[-1]["entry"], op=op_name(func), continues=True)
        out = func(*args, **kwargs)
        self._wrote(func, args, kwargs)
        if self.phase == "backward" and self.sweep:
            self._count_backward(func, args, kwargs, out)
        kind = "grad" if self.phase == "backward" else "optimizer"
        for t in op_tensors(out):
            key = self._key(t)
            if self.lookup(t, key) is None:
                self.tensor(t, kind, name=None, scope=None, key=key)
        return out

    def _count_backward(self, func, args, kwargs, out):
        """A backward op's FLOPs go to the node running it (a checkpoint's recompute, to the node that started it)."""
        count, source = flops(func, args, kwargs, out)
        if not count:
            return
        item = self.sweep[-1]
        item["flops"] += count
        by_source = item["flops_by_source"]
        by_source[source] = by_source.get(source, 0) + count

    def _forward_op(self, func, args, kwargs):
        name = op_name(func)
        inputs = op_tensors(args) + op_tensors(tuple(kwargs.values()))
        input_ids = [self.known(t, "input", None, scope="input") for t in inputs]
        index = len(self.tape)
        self._note_functions(index, inputs, input_ids)
        entry = {"index": index, "op": name, "family": family(name), "backward": "", "inputs": input_ids,
                 "output": None, "saved": [], "flops": 0, "flops_source": TAPESCOPE, "scope": self.scope, "why": "",
                 "phase": "forward", "attrs": {"aten": aten_name(func)}}
        self.tape.append(entry)
        self._new_step(index)
        out = func(*args, **kwargs)
        self._wrote(func, args, kwargs)
        outputs = op_tensors(out)
        ids = [self.tensor(t, "activation", name=f"{name}{index}" + (f".{i}" if i else ""), produced_by=index,
                           scope=entry["scope"]) for i, t in enumerate(outputs)]
        entry["output"] = ids[0] if ids else None
        if len(ids) > 1:
            entry["attrs"]["outputs"] = ids
        entry["flops"], entry["flops_source"] = flops(func, args, kwargs, out, inputs)
        sequence_nr = _next_sequence_nr()
        for seq in range(self._last_seq, sequence_nr):      # the autograd node(s) this op created
            self._entry_of_seq[seq] = index
        self._last_seq = sequence_nr
        return out

    def _note_functions(self, index, inputs, input_ids):
        """A custom autograd.Function's node is made before its forward runs its ops (with grad off), so no op
        creates it: it is the entry that produced its output, known when a later op (or the loss) reads that output."""
        first_seq = _next_sequence_nr()
        for seq in range(self._last_seq, first_seq):
            self._awaiting_output[seq] = index
        self._last_seq = first_seq
        if self._awaiting_output:
            self._claim_outputs(inputs, input_ids)

    def _claim_outputs(self, tensors, ids):
        for tensor, uid in zip(tensors, ids):
            node = tensor.grad_fn
            if node is not None and node._sequence_nr() in self._awaiting_output:
                produced_by = self.tensors[uid]["produced_by"]
                fallback = self._awaiting_output.pop(node._sequence_nr())
                self._entry_of_seq[node._sequence_nr()] = fallback if produced_by is None else produced_by

    def _wrote(self, func, args, kwargs):
        """Count a write into each storage `func` mutates (its schema's in-place and out= arguments)."""
        positions, names = written_arguments(func)
        if not positions and not names:
            return
        written = [args[i] for i in positions if i < len(args)] + [kwargs[n] for n in names if n in kwargs]
        for tensor in op_tensors(written):
            record = self._live.get(tensor.untyped_storage().data_ptr())
            if record is not None:
                self._writes[record["id"]] = self._writes.get(record["id"], 0) + 1

    # ----- what autograd saves ------------------------------------------------------------------
    def pack(self, tensor):
        if self.phase != "forward":
            return Packed(tensor, None, None)          # a recompute's packs: not the forward's tape
        uid = self.known(tensor, "activation", None, scope=self.scope)
        self.packed.append((uid, self.tensors[uid]["storage"]))
        return Packed(self._alias(tensor), uid, self)

    def unpack(self, packed):
        if self._probe is not None and packed.uid is not None:
            self._probed(packed.uid, "saved", "saved_by")
        return packed.tensor

    def _probed(self, uid, field, back_field):
        """The node being probed saves tensor `uid`: listed in its entry's `field` (saved, or recomputes in a
        checkpoint region) and the tensor's `back_field`, named by the attribute read."""
        index, names, label = self._probe
        entry = self.tape[index]
        listed = entry.setdefault(field, [])
        if uid not in listed:
            listed.append(uid)
            self.tensors[uid].setdefault(back_field, []).append(index)
        names.append(label.format(len(names)))

    def on_release(self, uid):
        if self.sweep and self.phase == "backward":
            freed = self.sweep[-1]["freed"]
            if uid not in freed:
                freed.append(uid)

    # ----- when the last Tensor over a storage goes (`dropped`, apart from autograd's hold: `freed`) ----
    def _alias(self, tensor):
        """What a Packed holds: a second Tensor over the same storage, so the user's own Tensor dies when the
        program drops it (its finalizer gives `dropped`) while the saved storage lives on until released."""
        self._busy += 1
        try:
            return tensor.detach()
        finally:
            self._busy -= 1

    def _watch_drop(self, tensor, storage):
        """Count the Tensors over a forward storage; when the last goes, that step is the storage's `dropped`."""
        if self.phase != "forward" or storage["setup"]:
            return
        self._holding[storage["id"]] = self._holding.get(storage["id"], 0) + 1
        storage_id = storage["id"]
        self._watching.append(weakref.ref(tensor, lambda _ref: self._on_tensor_dropped(storage_id)))

    def _on_tensor_dropped(self, storage_id):
        count = self._holding[storage_id] - 1
        self._holding[storage_id] = count
        if count == 0 and self.phase != "done":
            self.storages[storage_id]["dropped"] = self.step

    # ----- which storage enters each block (what a checkpoint of it keeps) ------------------------
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
            self.blocks.append({"path": path, "input_storage": self.tensors[uid]["storage"]})
        return entered

    # ----- the graph, after forward -------------------------------------------------------------
    def attach(self, loss):
        """Walk loss.grad_fn's graph: which node is which entry, what each saves, and hook the sweep."""
        seen, stack = set(), [loss.grad_fn] if loss.grad_fn is not None else []
        self._busy += 1             # reading _saved_* must not record ops
        try:
            if self._awaiting_output:
                self._claim_outputs([loss], [self.known(loss, "activation", None)])
            for seq, first_entry in self._awaiting_output.items():     # its output never seen: its first op
                self._entry_of_seq.setdefault(seq, first_entry)
            self._walk(seen, stack)
        finally:
            self._busy -= 1

    def _walk(self, seen, stack):
        while stack:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            if _is_accumulate(node):
                index = None
                self._variable_of[node] = node.variable
            else:
                index = self._entry_of_seq.get(node._sequence_nr())
            self._node_entry[node] = index
            if index is not None:
                self._read_saved(node, index)
            self._handles.append(node.register_prehook(self._node_begin(node)))
            self._handles.append(node.register_hook(self._node_end(node)))
            stack.extend(next_node for next_node, _ in node.next_functions)

    def _read_saved(self, node, index):
        entry = self.tape[index]
        entry["backward"] = node.name()
        names = []
        for attr, label in _saved_attributes(type(node)):
            self._probe = (index, names, label)
            try:
                getattr(node, attr)
            except RuntimeError:        # freed already, or not a tensor
                pass
            finally:
                self._probe = None
        if names and "checkpoint_region" in entry:
            entry["why"] = (f"{node.name()} needs {', '.join(dict.fromkeys(names))} in backward; checkpoint keeps "
                            f"placeholders and region {entry['checkpoint_region']} recomputes them")
        elif names:
            entry["why"] = f"{node.name()} keeps {', '.join(dict.fromkeys(names))} for backward"
        else:
            entry["why"] = f"{node.name()} keeps nothing for backward"

    def _node_begin(self, node):
        def begin(grad_outputs):
            index = self._node_entry.get(node)
            if index is None:
                self._accumulate(node, grad_outputs)
                return None
            self._new_step(index)
            entry = self.tape[index]
            grad = next(filter(_is_given, grad_outputs), None)
            adjoint = None
            if grad is not None:
                uid = self._gradient_of(grad, entry["output"])
                adjoint = {"tensor": uid, "shape": list(grad.shape)}
                self._describe(adjoint, grad, with_values=False)
            self.sweep.append({"step": self.step, "entry": index, "op": entry["op"], "backward": entry["backward"],
                               "adjoint": adjoint, "reads": list(entry["saved"]), "why": entry["why"],
                               "contributions": [], "accumulations": [], "freed": [], "ready": [], "pending": {},
                               "flops": 0, "flops_by_source": {}})
            return None
        return begin

    def _node_end(self, node):
        def end(grad_inputs, grad_outputs):
            if self._node_entry.get(node) is None or not self.sweep:
                return None
            item = self.sweep[-1]
            if "checkpoint_region" in self.tape[item["entry"]]:
                item["reads"] = self.reads_of(item["entry"])       # known once its region was recomputed
            for grad, (target, _) in zip(grad_inputs, node.next_functions):
                if grad is None or target is None:
                    continue
                variable = self._variable_of.get(target)
                if variable is not None:
                    to = self.lookup(variable)
                else:
                    parent = self._node_entry.get(target)
                    to = self.tape[parent]["output"] if parent is not None else None
                if to is not None:
                    item["contributions"].append({"to": to, "grad": self._gradient_of(grad, to),
                                                  "shape": list(grad.shape)})
            return None
        return end

    def _gradient_of(self, grad, owner):
        """The record of `grad` as the gradient of tensor record `owner`: d<owner's name>, grad_of the owner. A
        buffer a vjp passed through (AddBackward hands one tensor to both inputs) is the gradient of several
        tensors: each gets a record of its own over that storage, as a view does."""
        uid = self.known(grad, "grad", None)
        if owner is None:
            return uid
        record = self.tensors[uid]
        if record.get("grad_of") not in (None, owner):
            if record["kind"] != "grad":
                return uid
            uid = self.tensor(grad, "grad", None)              # a second record over the same storage
            record = self.tensors[uid]
        elif record["kind"] != "grad" or record["produced_by"] is not None:
            return uid                  # a forward value handed back as a gradient keeps its own name
        record["grad_of"] = owner
        if not record["name"].endswith(".grad"):
            record["name"] = f"d{self.tensors[owner]['name']}"
        return uid

    def _accumulate(self, node, grad_outputs):
        param = self.lookup(self._variable_of[node])
        grad = grad_outputs[0] if grad_outputs else None
        if param is None or grad is None or not self.sweep:
            return
        uid = self.known(grad, "grad", None)
        self.tensors[uid].update(grad_of=param, name=f"{self.tensors[param]['name']}.grad")
        self.sweep[-1]["accumulations"].append({"tensor": param, "parts": [uid], "total": uid, "into": "grad"})

    def name_grads(self, model):
        """After backward: each parameter's .grad (a copy when it was accumulated) is named after it."""
        for name, p in model.named_parameters():
            if p.grad is not None:
                uid = self.known(p.grad, "grad", f"{name}.grad")
                param = self.lookup(p)
                self.tensors[uid].update(name=f"{name}.grad", **({"grad_of": param} if param is not None else {}))

    def finish(self):
        self.phase = "done"
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self._node_entry, self._variable_of = {}, {}


_MARKERS = (torch.ops.profiler._record_function_enter_new.default, torch.ops.profiler._record_function_exit._RecordFunction)


_WIDENED = (torch.bfloat16, torch.float16)     # numpy has no bfloat16: both are read as float32


def _is_given(value):
    return value is not None


@functools.lru_cache(maxsize=None)
def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _tensors(tree):
    return [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]


@functools.lru_cache(maxsize=None)
def _saved_attributes(node_class):
    """(attribute, label) of what a grad_fn class exposes of its saves: a built-in node's `_saved_*` attributes
    (each class is generated per op: the names are fixed), a custom autograd.Function's `saved_tensors`
    (what its ctx.save_for_backward was given, labelled by position)."""
    generated = tuple((attr, attr[len("_saved_"):]) for attr in dir(node_class) if attr.startswith("_saved_"))
    if generated or not issubclass(node_class, torch.autograd.function.BackwardCFunction):
        return generated
    return (("saved_tensors", "saved_tensors[{}]"),)


def _is_accumulate(node):
    return hasattr(node, "variable") and node.name() == "torch::autograd::AccumulateGrad"
