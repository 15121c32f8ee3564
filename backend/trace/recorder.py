"""The recorder: an engine listener that turns one run's events into tensors, storages, tape entries, steps and sweep items.

It only collects; document.py derives live bytes, intervals and the summary from what is collected here.
"""
import math

from backend.tape import amp, events, grad_mode
from backend.tape.storage import next_uid
from backend.trace.deadline import check as check_deadline
from backend.trace.records import (SMALL_TENSOR_ELEMENTS, accumulation, adjoint_record, block_record, contribution,
                                   entry_record, step_record, storage_record, sweep_item, tensor_record)
from backend.trace.values import MAX_VALUE_ELEMENTS, ValueTable


class Recorder:
    def __init__(self, values=True):
        """`values=False` keeps no tensor values or statistics: a run recorded only for its memory and steps."""
        self.phase = "setup"
        self.tensors = {}          # uid -> tensor record
        self.values = ValueTable() if values else _NoValues()   # described when the document is built
        self.storages = {}         # address -> storage record
        self.tape = []             # entries in record order
        self.entry_of = {}         # node.seq -> tape index
        self.steps = []            # {index, phase, entry}
        self.step = 0              # the current step (0 also for what exists before the first entry)
        self.sweep = []            # one item per backward step
        self.dependencies = {}       # tape index -> consumers counted when backward began
        self._waiting = {}           # nodes that hold part of their adjoint, not yet run
        self.blocks = []             # {path, input_storage} per block, when the driver reports them
        self._block_cursor = 0       # the block a later micro-batch's next reported input belongs to
        self._checkpoints = []       # tape indices of the checkpoints whose forward is running
        self._in_checkpoint = 0      # > 0 while a checkpoint's forward runs its region without recording
        self._holders = {}           # storage address -> live Tensor objects over it
        self._running = []           # sweep items of the nodes running now (a checkpoint's backward nests)
        self._phases = []            # the phase to return to when a recompute ends
        self._aliases = {}           # (gradient storage uid, tensor uid) -> the record naming it that tensor's
        self._storage_names = {}     # storage id -> (the first tensor over it, [the views named after it])
        self._unrecorded_op = None   # the last op that ran without an entry: it made the next unnamed tensor
        self.micro_batch = None      # 1..N while an accumulated step runs its micro-batches, else None
        self.scaler = None           # the loss scaler's step, when the run used mixed precision
        self._handlers = events.handlers(self, every=True)     # kind -> on_<kind>: every declared kind has one

    # ----- phases and steps ---------------------------------------------------------------------
    def begin(self, phase, micro_batch=None):
        self.phase, self.micro_batch = phase, micro_batch

    def _new_step(self, entry, **extra):
        check_deadline()             # a run past its time budget stops here, between two steps
        self.step = len(self.steps)
        step = step_record(self.step, self.phase, entry, **extra)
        if self.micro_batch is not None:
            step["micro_batch"] = self.micro_batch
        self.steps.append(step)

    def __call__(self, kind, payload):
        self._handlers[kind](**payload)

    # ----- storages and tensors -----------------------------------------------------------------
    def _storage(self, storage):
        record = self.storages.get(storage.address)
        if record is None:
            record = storage_record(len(self.storages), f"0x{storage.address:x}", storage.nbytes, storage.kind,
                                    self.step, setup=not self.steps)
            self.storages[storage.address] = record
        return record

    def _tensor(self, uid, storage, shape, dtype, name, kind, node=None, array=None, **extra):
        produced_by = self.entry_of.get(node.seq) if node is not None else None
        storage_record_ = self._storage(storage)
        name = name or self._unnamed(uid, storage_record_["id"], produced_by, extra.get("view"))
        self._storage_names.setdefault(storage_record_["id"], (uid, []))
        record = tensor_record(
            uid, name, kind, shape, _dtype_name(dtype), storage_record_, self.step, produced_by,
            # unrecorded ops (a checkpoint's forward) have no node: the layer being run then is the scope
            node.scope if node is not None else (grad_mode.scope or None), **extra)
        if array is not None:
            record["value"] = {}
            self.values.add(record["value"], array, array.size <= SMALL_TENSOR_ELEMENTS)
        self.tensors[uid] = record
        return record

    def _unnamed(self, uid, storage_id, produced_by, view):
        """The name of a tensor its maker did not name: an op's output is t<entry>; a view of a named tensor that no
        entry made (a micro-batch's rows of x) is x.view1, x.view2, ...; else the op that ran without an entry and the
        step (cast@0: autocast's copy of x). Never t<id>, which reads as some entry's output."""
        if produced_by is not None:
            return f"t{produced_by}"
        base = self._storage_names.get(storage_id)
        if view and base is not None:           # and renamed with its base (_rename: a gradient becomes d<owner>)
            base[1].append(uid)
            return f"{self._name_of(base[0])}.view{len(base[1])}"
        return f"{self._unrecorded_op or 'tensor'}@{self.step}"

    def _rename(self, uid, name):
        """A tensor's name from now on, and its views' (x.view1 follows x)."""
        record = self.tensors[uid]
        record["name"] = name
        base, views = self._storage_names.get(record["storage"], (None, ()))
        if base == uid:
            for k, view in enumerate(views, start=1):
                self.tensors[view]["name"] = f"{name}.view{k}"

    def _held(self, storage):
        """One more Tensor over `storage`; `dropped` becomes the step its last one goes (see on_drop)."""
        self._holders[storage.address] = self._holders.get(storage.address, 0) + 1

    def on_drop(self, tensor):
        record = self.tensors.get(tensor.uid)
        if record is not None:
            record["dropped"] = self.step
        address = tensor.storage.address
        count = self._holders.get(address, 0) - 1
        if count > 0:
            self._holders[address] = count
        elif address in self.storages:
            self._holders.pop(address, None)
            self.storages[address]["dropped"] = self.step

    def note_block_input(self, path, tensor):
        """The model's driver tells which storage enters each block (what a checkpoint of it must keep). Under
        accumulation every micro-batch tells: the blocks are the first's, each with every micro-batch's input."""
        storage = self._storage(tensor.storage)["id"]
        if self.micro_batch is None:
            self.blocks.append(block_record(path, storage))
            return
        if self.micro_batch == 1:
            self.blocks.append(block_record(path, storage, micro_batch_inputs=[storage]))
            self._block_cursor = 0
            return
        block = self.blocks[self._block_cursor % len(self.blocks)]      # the same blocks, in the same order
        if len(block["micro_batch_inputs"]) < self.micro_batch:
            block["micro_batch_inputs"].append(storage)
        self._block_cursor += 1

    def on_op(self, op, attrs):
        self._unrecorded_op = op.name
        if self._in_checkpoint:       # the region's forward, unrecorded: a step per op keeps its transients apart
            self._new_step(self._checkpoints[-1], op=op.name, recorded=False)
        elif self.phase == "forward" and self.blocks:
            # An op of the model that is not on the tape (under no_grad, or before the first parameter that needs
            # grad, as torch prunes a frozen prefix; or autocast's cast of an input that needs no grad, such as x):
            # a step of its own too, with no entry. An autocast cast names the dtype it casts to.
            cast = {"autocast": attrs["dtype"]} if amp.active and op.name == "cast" else {}
            self._new_step(None, op=op.name, recorded=False, **cast)

    def on_tangent(self, op, attrs, inputs, output):
        """A forward-mode op (a JVP sweep under a recorder): its step was its "op" event; tangents are not traced."""

    def on_checkpoint_begin(self, node):
        self._in_checkpoint += 1
        self._checkpoints.append(self.entry_of[node.seq])

    def on_checkpoint_end(self, node):
        self._in_checkpoint -= 1
        self._checkpoints.pop()

    def on_alloc(self, tensor, storage, node):
        self._held(storage)
        frozen = {"frozen": True} if storage.kind == "param" and not tensor.requires_grad else {}
        self._output(self._tensor(tensor.uid, storage, tensor.data.shape, tensor.data.dtype, tensor.name,
                                  storage.kind, node, tensor.data, **frozen))

    def on_view(self, tensor, storage, node):
        self._held(storage)
        self._output(self._tensor(tensor.uid, storage, tensor.data.shape, tensor.data.dtype, tensor.name,
                                  self._storage(storage)["kind"], node, tensor.data, view=True))

    def _output(self, record):
        if record["produced_by"] is not None:
            self.tape[record["produced_by"]]["output"] = record["id"]

    def on_alloc_extra(self, uid, storage, array, node, name):
        index = self.entry_of[node.seq]
        self._tensor(uid, storage, array.shape, array.dtype, f"{node.op.name}{index}.{name}", "activation",
                     node, array)
        self.storages[storage.address]["extra"] = True      # held by the tape only, never by a Tensor

    def on_alloc_grad(self, storage, array, owner):
        self._tensor(storage.uid, storage, array.shape, array.dtype, f"d{self._name_of(owner)}", "grad", None,
                     array, grad_of=owner)

    def on_grad(self, tensor, storage):
        if storage.uid not in self.tensors:
            self._tensor(storage.uid, storage, tensor.grad.shape, tensor.grad.dtype, f"{tensor.name}.grad",
                         "grad", None, tensor.grad)
        self.tensors[storage.uid]["grad_of"] = tensor.uid
        self._rename(storage.uid, f"{self.tensors[tensor.uid]['name']}.grad")

    def on_free(self, storage):
        record = self.storages.get(storage.address)
        if record is not None and record["freed"] is None:
            record["freed"] = self.step

    def on_inplace(self, tensor, version):
        self.tensors[tensor.uid].setdefault("versions", []).append(
            {"step": self.step, "version": version, "scope": grad_mode.scope or None})

    # ----- the tape -----------------------------------------------------------------------------
    def on_record(self, node, inputs, out_shape):
        index = len(self.tape)
        self.entry_of[node.seq] = index
        op = node.op
        self.tape.append(entry_record(index, op.name, op.family, op.backward_name, [t.uid for t in inputs],
                                      node.scope, int(op.flops(node.shapes, out_shape, node.attrs)), op.why,
                                      _plain_attrs(node.attrs), self.phase))
        if node.phase == "backward":        # a vjp's own op, recorded under create_graph: the second tape
            self.tape[index]["recorded_in"] = "backward"
            if self._running:
                self.tape[index]["recorded_for"] = self._running[-1]["entry"]
        if self.micro_batch is not None:
            self.tape[index]["micro_batch"] = self.micro_batch
        self._new_step(index)

    def on_save_recipe(self, node, name, uid):
        """A saved value kept as a recipe (selective recomputation): not pinned, re-derived in backward."""
        index = self.entry_of[node.seq]
        self.tape[index].setdefault("recomputes", []).append(uid)
        self.tensors[uid].setdefault("recomputed_by", []).append(index)

    def on_alloc_recompute(self, storage, array, entry):
        original = self.tape[entry]["output"] if entry < len(self.tape) else None
        name = self.tensors[original]["name"] if original in self.tensors else f"entry {entry}"
        self._tensor(storage.uid, storage, array.shape, array.dtype, f"{name} (recomputed)", "activation",
                     None, array, recompute_of=original)

    def on_save(self, node, name, uid, storage):
        index = self.entry_of[node.seq]
        self.tape[index]["saved"].append(uid)
        self.tensors[uid]["saved_by"].append(index)

    # ----- the adjoint sweep --------------------------------------------------------------------
    def on_backward_begin(self, root, dependencies):
        self.dependencies.update({self.entry_of[n.seq]: c for n, c in dependencies.items() if n.seq in self.entry_of})

    def on_node_begin(self, node, adjoint):
        index = self.entry_of[node.seq]
        self._waiting.pop(node.seq, None)
        self._new_step(index)
        entry = self.tape[index]
        adjoint = self._adjoint(adjoint, node.output_uid)
        self.sweep.append(sweep_item(self.step, entry, adjoint, list(entry["saved"])))
        self._running.append(self.sweep[-1])

    def _adjoint(self, adjoint, owner):
        """The incoming adjoint (the gradient of tensor `owner`): its values live once in its tensor record, or
        here when that has only statistics."""
        if adjoint is None:
            return None
        uid = self._gradient_of(adjoint, owner)
        described = adjoint_record(uid, adjoint.array.shape)
        in_record = uid in self.tensors and adjoint.array.size <= SMALL_TENSOR_ELEMENTS
        self.values.add(described, adjoint.array, not in_record and adjoint.array.size <= MAX_VALUE_ELEMENTS)
        return described

    def on_contribution(self, node, parent, adjoint):
        if hasattr(parent, "output_uid"):
            target = parent.output_uid
            self._waiting[parent.seq] = parent
        else:
            target = parent.uid
        self._running[-1]["contributions"].append(contribution(target, self._gradient_of(adjoint, target),
                                                               adjoint.array.shape))

    def _gradient_of(self, adjoint, owner):
        """The record of `adjoint` as the gradient of tensor `owner`: named d<owner>, its grad_of the owner.

        A vjp that passes its adjoint through (add hands the same buffer to both inputs) makes one buffer the
        gradient of several tensors: each gets a record of its own over that storage, as a view does."""
        uid = adjoint.storage.uid
        record = self.tensors.get(uid)
        if record is None:
            return uid
        if record.get("grad_of") in (None, owner):
            made_by = record["produced_by"]
            if made_by is not None and self.tape[made_by]["phase"] == "forward":
                return uid                  # a forward value (never an adjoint, but never renamed either)
            record["grad_of"] = owner
            if not record["name"].endswith(".grad"):
                self._rename(uid, f"d{self._name_of(owner)}")
            return uid
        alias = self._aliases.get((uid, owner))
        if alias is None:
            alias = self._aliases[(uid, owner)] = next_uid()
            self._tensor(alias, adjoint.storage, adjoint.array.shape, adjoint.array.dtype,
                         f"d{self._name_of(owner)}", "grad", None, adjoint.array, grad_of=owner, view=True)
        return alias

    def _name_of(self, uid):
        return self.tensors[uid]["name"] if uid in self.tensors else f"t{uid}"

    def on_accumulate(self, target, parts, total):
        self._running[-1]["accumulations"].append(accumulation(
            target, [self._aliases.get((p.storage.uid, target), p.storage.uid) for p in parts], total.storage.uid,
            "buffer"))

    def on_accumulate_leaf(self, leaf, parts, first):
        self._running[-1]["accumulations"].append(accumulation(
            leaf.uid, [p.storage.uid for p in parts], leaf._grad_storage.uid, "grad", first=first))

    def on_release(self, node, uids):
        self._running[-1]["freed"] = list(uids)

    def on_node_end(self, node, ready, pending):
        item = self._running.pop()
        item["ready"] = [self.entry_of[n.seq] for n in ready]
        # Only nodes part-way there: some consumers have delivered, some not (the += in progress).
        item["pending"] = {}
        for waiting in self._waiting.values():
            if pending.get(waiting, 0) > 0:     # a nested (recompute) sweep counts only its own nodes
                item["pending"][str(self.entry_of[waiting.seq])] = pending[waiting]

    # ----- recompute (a checkpoint's backward re-runs its region) -------------------------------------
    def on_recompute_begin(self, node):
        self._phases.append(self.phase)
        self.phase = "recompute"

    def on_recompute_end(self, node):
        self.phase = self._phases.pop()

    # ----- optimizer ----------------------------------------------------------------------------
    def on_optimizer_step(self, param, index):
        self._new_step(None, param=param.uid)

    # ----- mixed precision ----------------------------------------------------------------------
    def on_unscale(self, param, underflow):
        """A master gradient unscaled: its record carries what float16 would zero without the scale and with it."""
        record = self.tensors.get(param._grad_storage.uid)
        if record is not None:
            record["underflow"] = underflow

    def note_scaler(self, summary):
        self.scaler = summary


class _NoValues:
    """A ValueTable that keeps nothing (see Recorder(values=False))."""

    def add(self, target, array, with_values):
        pass

    def fill(self):
        pass


_DTYPE_NAMES = {}


def _dtype_name(dtype):
    """numpy's dtype.name costs microseconds; a run has a handful of dtypes."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype)
    return name


def _plain_attrs(attrs):
    """Attributes as JSON: numbers, strings and lists pass; anything else (slices, RNG states) becomes text."""
    plain = {}
    for key, value in attrs.items():
        if key == "rng_state":
            plain[key] = "saved" if value is not None else None
        elif isinstance(value, float) and not math.isfinite(value):
            plain[key] = str(value)
        elif isinstance(value, (int, float, str, bool)) or value is None:
            plain[key] = value
        elif isinstance(value, tuple) and all(isinstance(v, int) for v in value):
            plain[key] = list(value)
        else:
            plain[key] = repr(value)[:200]
    return plain
