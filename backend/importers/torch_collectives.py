"""One rank's recorder: TorchRecorder plus the step's collectives as tape entries of family `collective`, and the
sharded memory a distributed step holds (DTensor's local shards, FSDP2's unsharded parameters, DDP's buckets).

What a TorchDispatchMode sees of torch.distributed (torch 2.13, gloo; found with a 2-rank prototype):
- every c10d op (c10d.allreduce_, _allgather_base_, _reduce_scatter_base_, broadcast_, scatter_, ...) reaches the
  mode on the thread that issues it, DDP's C++ reducer included: its bucket all-reduce (c10d.allreduce_ on the
  bucket's flat buffer) arrives on the autograd thread (the caller's, on CPU) right after the AccumulateGrad node
  that made the bucket ready. A c10d op only issues: it returns a Work, and `Work.wait()` is no op at all, so the
  wait is seen by wrapping Work.wait (FSDP2 and torch.distributed's Python waits) or, for DDP's reducer, which waits
  in C++ in its final autograd callback, at the end of backward;
- a functional collective (_c10d_functional.all_reduce, all_gather_into_tensor, reduce_scatter_tensor, ...)
  allocates its output and returns at once; `_c10d_functional.wait_tensor` is its wait, an op the mode sees;
- an op on a DTensor (or on an AsyncCollectiveTensor) reaches the mode once, as the DTensor op; the mode
  answers NotImplemented, so DTensor's own dispatch runs with the mode still on the stack and the mode sees what
  really runs on this rank: the local op on the local shard and any redistribution's functional collectives
  (clip_grad_norm_'s all-reduce of the partial norm, Shard -> Replicate all-gathers). Sharding propagation's
  meta and fake tensors (the first time an op's sharding is decided; then it is cached) pass through unrecorded;
- FSDP2 frees an unsharded parameter by resizing its storage to 0 bytes and brings it back by resizing it again
  (fsdp._fully_shard._fsdp_param's free_storage and alloc_storage): no op, no storage death, so both are wrapped
  while the step is recorded.

Every storage the step's sharding makes is tagged with its `shard_role` (ROLES); the roles only sharding holds are
memory kinds too (SHARDING_KINDS, declared in backend/trace/memory_kinds.py: unsharded parameters and gradients,
FSDP2's communication buffers), given when the step is recorded (sharding_kinds); parameter and gradient shards and
DDP's buckets are the rank's param and grad.
"""
import sys

import torch
import torch.distributed as dist
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack, is_traceable_wrapper_subclass
from torch.utils._pytree import tree_leaves

from backend.importers.torch_ddp import find_ddp
from backend.importers.torch_fake import step_fake_mode
from backend.importers.torch_ops import TAPESCOPE
from backend.importers.torch_recorder import TorchRecorder
from backend.importers.torch_storages import storage_address
from backend.importers.torch_waits import remember_work
from backend.trace.memory_kinds import SHARDING_KINDS
from backend.trace.records import entry_record

ROLES = {
    "sharded_param": "the rank's shard of a parameter (DTensor.to_local())",
    "unsharded_param": "a parameter all-gathered for its module's forward or backward",
    "grad_shard": "the rank's shard of a gradient (a reduce-scatter's output)",
    "unsharded_grad": "a full gradient waiting for its reduce-scatter",
    "comm_buffer": "a collective's input or output buffer",
    "bucket": "a DDP bucket: the flat buffer its gradients are copied into and all-reduced in",
}


# c10d ops whose tensors (argument 0) are both what is sent and what is received; every other c10d op writes its
# argument 0 from its argument 1 (output, input)
IN_PLACE = {"allreduce_", "allreduce_coalesced_", "broadcast_", "reduce_", "send", "recv_", "recv_any_source_"}
OP_WORDS = {     # c10d / _c10d_functional op -> the collective's name on the tape
    "allreduce_": "all_reduce", "allreduce_coalesced_": "all_reduce", "all_reduce": "all_reduce",
    "all_reduce_": "all_reduce", "all_reduce_coalesced": "all_reduce", "all_reduce_coalesced_": "all_reduce",
    "_allgather_base_": "all_gather", "allgather_": "all_gather", "allgather_into_tensor_coalesced_": "all_gather",
    "allgather_coalesced_": "all_gather", "all_gather_into_tensor": "all_gather",
    "all_gather_into_tensor_coalesced": "all_gather", "all_gather_into_tensor_out": "all_gather",
    "_reduce_scatter_base_": "reduce_scatter", "reduce_scatter_": "reduce_scatter",
    "reduce_scatter_tensor_coalesced_": "reduce_scatter", "reduce_scatter_tensor": "reduce_scatter",
    "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "broadcast_": "broadcast", "broadcast": "broadcast", "broadcast__": "broadcast", "scatter_": "scatter",
    "gather_": "gather", "reduce_": "reduce", "alltoall_base_": "all_to_all", "alltoall_": "all_to_all",
    "all_to_all_single": "all_to_all", "barrier": "barrier", "send": "send", "recv_": "recv",
}
NAMESPACES = ("c10d", "_c10d_functional")
UNRECORDED = {"_wrap_tensor_autograd", "monitored_barrier_"}     # bookkeeping, no communication


def local(tensor):
    """The tensor this rank holds: a DTensor's local shard, an AsyncCollectiveTensor's result, else itself."""
    while is_traceable_wrapper_subclass(tensor):
        inner = getattr(tensor, "_local_tensor", None)
        if inner is None:
            names, _ = tensor.__tensor_flatten__()        # any other wrapper: its first inner tensor
            inner = getattr(tensor, names[0], None) if names else None
        if not isinstance(inner, torch.Tensor):
            break
        tensor = inner
    return tensor


class RankRecorder(TorchRecorder):
    """TorchRecorder on one rank of a process group: the same records, over the tensors this rank holds."""

    def __init__(self, with_values=False, model=None):
        super().__init__(with_values=with_values)
        self.collectives = []           # tape indices of the collective entries, in order
        self.ddp_buckets = []           # DDP's reducer's buckets: {index, bytes, params, entry}
        self._allocated = set()         # storages an allocation entry of the tape made, read up to _allocations_read
        self._allocations_read = 0
        self._pending = []              # issued, not yet waited: (tape index, output storage ids)
        self._ddp = find_ddp(model)
        self._names = {}                # id(parameter or local shard) -> name
        self._fsdp_buffers = {}         # id(tensor) -> role, for FSDP2's all-gather outputs and unsharded params
        self._buffer_units = {}         # id(tensor) -> the FSDP2 unit (module path) whose unsharded parameter it is
        self._storage_units = {}        # storage id -> that unit, for the storages those tensors were given
        self._fsdp_units = {}           # id(FSDPParamGroup) -> the path of the module fully_shard was given
        self._unit_params = {}          # that path -> the names of the parameters its unit shards
        self._fsdp_comm = set()         # storage ids an FSDP2 unit's collectives sent or received

    # ----- local shards in place of DTensors ---------------------------------------------------
    def tensor(self, tensor, kind, name=None, produced_by=None, scope=None, key=None, **extra):
        shard = local(tensor)
        uid = super().tensor(shard, kind, name, produced_by, scope, key if shard is tensor else None, **extra)
        if shard is not tensor and kind == "param":
            self._tag(self.tensors[uid]["storage"], "sharded_param")
        return uid

    def lookup(self, tensor, key=None):
        shard = local(tensor)
        return super().lookup(shard, key if shard is tensor else None)

    def _key(self, tensor):
        return super()._key(local(tensor))

    def known(self, tensor, kind, name, scope=None):
        return super().known(local(tensor), kind, name, scope)

    def _describe(self, target, tensor, with_values=None):
        tensor = local(tensor)
        if is_traceable_wrapper_subclass(tensor):
            return None                     # no local tensor to read
        if self._fsdp_units and not tensor.is_meta:
            # numpy() makes a storage unresizable for good, and FSDP2 frees and re-allocates its unsharded
            # parameters by resizing their storages: statistics are read from a copy
            self._busy += 1
            try:
                tensor = tensor.detach().clone()
            finally:
                self._busy -= 1
        return super()._describe(target, tensor, with_values)

    def _tag(self, storage_id, role):
        storage = self.storages[storage_id]
        storage.setdefault("shard_role", role)

    def add_model(self, model, batch_tensors):
        super().add_model(model, batch_tensors)
        self._names = {id(local(p)): name for name, p in model.named_parameters()}
        for path, module in model.named_modules():
            state = getattr(module, "_get_fsdp_state", None)
            group = state()._fsdp_param_group if state is not None else None
            if group is not None:
                self._fsdp_units[id(group)] = path or "model"
                self._unit_params[path or "model"] = [self._names.get(id(local(fp.sharded_param)), "?")
                                                      for fp in group.fsdp_params]
            for fsdp_param in (group.fsdp_params if group is not None else ()):
                # a parameter's all-gather output is its unsharded parameter's storage (the parameter a view of
                # it); the group's flat buffer the collective writes is a comm_buffer, tagged when it runs
                for tensor in (*fsdp_param.all_gather_outputs, *getattr(fsdp_param, "_unsharded_inner_tensors", ())):
                    self._fsdp_buffers[id(tensor)] = "unsharded_param"
                    self._buffer_units[id(tensor)] = path or "model"

    def sharding_kinds(self):
        """Give the memory only sharding holds its own kind (backend/trace/memory_kinds.py), storage and tensors:
        unsharded parameters and gradients, and the buffers FSDP2's collectives own. A tensor-parallel or clip
        collective's buffers are the program's activations and gradients and keep their kind (their role says it);
        parameter and gradient shards and DDP's buckets stay param and grad."""
        for storage in self.storages.values():
            role = storage.get("shard_role")
            if role in SHARDING_KINDS and (role != "comm_buffer" or storage["id"] in self._fsdp_comm):
                storage["kind"] = role
        kinds = {sid: storage["kind"] for sid, storage in self.storages.items()}
        for record in self.tensors.values():
            record["kind"] = kinds.get(record["storage"], record["kind"])
            if record["storage"] in self._storage_units:    # FSDP2's own tensors over it: their unit's scope
                record["scope"] = self._storage_units[record["storage"]]

    # ----- every op: subclasses unwrapped, collectives recorded -------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        leaves = tree_leaves((args, kwargs))
        if any(is_traceable_wrapper_subclass(leaf) for leaf in leaves):
            return NotImplemented           # DTensor runs its own dispatch, the mode still on: its local ops come here
        if any(isinstance(leaf, torch.Tensor) and _propagating(leaf) for leaf in leaves):
            return func(*args, **kwargs)    # sharding propagation (its first time for an op: later it is cached)
        if not any(isinstance(leaf, torch.Tensor) for leaf in leaves) and _faking():
            return func(*args, **kwargs)    # a factory op of sharding propagation, under its FakeTensorMode
        if func.namespace in NAMESPACES and not self._busy and self.phase not in ("setup", "done"):
            name = func._schema.name.split("::")[1]
            if name == "wait_tensor":
                return self._waited_tensor(func, args, kwargs)
            if name in UNRECORDED:
                return func(*args, **kwargs)
            return self._collective(func, name, args, kwargs)
        return super().__torch_dispatch__(func, types, args, kwargs)

    def begin(self, phase, micro_batch=None):
        if phase == "backward" and self._ddp is not None:
            self._read_buckets()
        if self.phase == "backward" and phase != "backward" and self.micro_batch is None:
            # DDP's reducer waits for every bucket in C++, in its final autograd callback: at backward's end (a
            # pipeline's micro-batches alternate phases; their sends and receives are waited in Python)
            self._wait_all("DDP's reducer waits for its buckets when backward ends")
        super().begin(phase, micro_batch)

    # ----- collectives ------------------------------------------------------------------------
    def _collective(self, func, name, args, kwargs):
        functional = func.namespace == "_c10d_functional"
        if functional or name in IN_PLACE:
            sent = _flat_tensors(args[0]) if args else []
            received_in_place = [] if functional else sent
        else:
            sent, received_in_place = _flat_tensors(args[1]), _flat_tensors(args[0])
        seen_before = set(self.storages)
        input_ids = [self.known(t, self._kind(), None) for t in sent]
        index = len(self.tape)
        op = OP_WORDS.get(name, name.rstrip("_"))
        unit = _fsdp_unit(self._fsdp_units) if self._fsdp_units else None
        entry = entry_record(index, op, "collective", "", input_ids, unit or self.scope, 0, "",
                             {"aten": f"{func.namespace}.{name}"}, self.phase, flops_source=TAPESCOPE)
        self.tape.append(entry)
        self._new_step(index, op=op, collective="issued")
        step = self.steps[-1]
        known_before = set(self.storages)
        out = func(*args, **kwargs)
        received = received_in_place if not functional else _flat_tensors(out)
        output_ids = [self.known(t, self._kind(), None) for t in received]
        made = sorted(set(self.storages) - known_before)
        buffers = sorted({self.tensors[uid]["storage"] for uid in output_ids} | set(made))
        entry["output"] = output_ids[0] if output_ids else None
        if len(output_ids) > 1:
            entry["attrs"]["outputs"] = output_ids
        group = _group_ranks(args)
        entry["collective"] = {
            "op": op, "event": "issued", "group": group, "bytes_in": _nbytes(sent), "bytes_out": _nbytes(received),
            "buffers": buffers, "allocated_bytes": sum(self.storages[s]["nbytes"] for s in made),
            "async": True, "waited_in": None}
        if unit is not None:        # what it moves: the unit's parameters (all-gather) or their gradients
            entry["collective"].update(fsdp_unit=unit, params=self._unit_params.get(unit, []))
            self._fsdp_comm.update(self.tensors[uid]["storage"] for uid in (*input_ids, *output_ids))
        entry["why"] = (f"{op} over ranks {group}: sends {_nbytes(sent):,} B, receives {_nbytes(received):,} B; "
                        "issued here, waited later")
        for uid in input_ids:
            if self._in_backward_ddp(op):
                self._as_bucket(self.storages[self.tensors[uid]["storage"]], seen_before)
            else:
                self._tag(self.tensors[uid]["storage"], "comm_buffer")
        for uid in output_ids:
            role = "grad_shard" if op == "reduce_scatter" else "comm_buffer"
            if not self._in_backward_ddp(op):
                self._tag(self.tensors[uid]["storage"], role)
        if op == "reduce_scatter":
            for uid in input_ids:
                self.storages[self.tensors[uid]["storage"]]["shard_role"] = "unsharded_grad"
        if self._in_backward_ddp(op):
            self._note_bucket(entry)
        self.collectives.append(index)
        if not functional and not (self._in_backward_ddp(op) or _issued_async_from_python()):
            # waited before it returned: torch.distributed's async_op=False, or C++ that waits at once (DDP
            # rebuilding its buckets broadcasts rank 0's assignment): one entry
            entry["collective"].update(event="completed", waited_in=index)
            entry["collective"]["async"] = False
            step["collective"] = "completed"
            entry["why"] = entry["why"].replace("issued here, waited later", "waited for before it returned")
            return out
        self._pending.append((index, {self.tensors[uid]["storage"] for uid in output_ids}))
        if not functional:
            remember_work(self, index)
        return out

    def _kind(self):
        return {"forward": "activation", "backward": "grad", "optimizer": "optimizer"}.get(self.phase, "activation")

    def _in_backward_ddp(self, op):
        return self._ddp is not None and self.phase == "backward" and op == "all_reduce"

    def _waited(self, issued, how):
        """The second entry of an asynchronous collective: where this rank waited for it."""
        self._pending = [(i, s) for i, s in self._pending if i != issued]
        first = self.tape[issued]
        index = len(self.tape)
        entry = {**first, "index": index, "phase": self.phase, "scope": self.scope, "inputs": [], "saved": [],
                 "attrs": {"aten": first["attrs"]["aten"], "waits_for": issued},
                 "collective": {**first["collective"], "event": "waited", "issued_in": issued, "how": how},
                 "why": f"{first['op']} (entry {issued}) waited: {how}"}
        entry["collective"].pop("waited_in", None)
        self.tape.append(entry)
        first["collective"]["waited_in"] = index
        self._new_step(index, op=first["op"], collective="waited")
        self.collectives.append(index)

    def _waited_tensor(self, func, args, kwargs):
        out = func(*args, **kwargs)
        storage = self._live.get(storage_address(local(args[0]).untyped_storage())) if args else None
        for issued, storages in self._pending:
            if storage is not None and storage["id"] in storages:
                self._waited(issued, "wait_tensor")
                break
        return out

    def is_pending(self, issued):
        return any(i == issued for i, _ in self._pending)

    def waited_work(self, issued):
        if self.phase in ("setup", "done") or not self.is_pending(issued):
            return
        self._waited(issued, "Work.wait()")

    def _wait_all(self, how):
        for issued, _ in list(self._pending):
            if self.tape[issued]["attrs"]["aten"].startswith("c10d."):
                self._waited(issued, how)

    # ----- DDP's buckets --------------------------------------------------------------------------
    def _read_buckets(self):
        """DDP's reducer's buckets as it will launch them (rebuilt from the gradients' order at the second step's
        forward): index, bytes and the parameters each holds."""
        self._busy += 1
        try:
            buckets = self._ddp.reducer._get_zeros_like_grad_buckets()
            self.ddp_buckets = [{"index": b.index(), "bytes": int(b.buffer().nbytes),
                                 "params": [self._names.get(id(p), "?") for p in b.parameters()], "entry": None}
                                for b in buckets]
            del buckets
        finally:
            self._busy -= 1

    def _as_bucket(self, storage, seen_before):
        """A DDP bucket's flat buffer is gradient memory: allocated when DDP (re)builds its buckets (at construction,
        or at the second step's forward, an `empty` the recorder saw), or, first seen at its all-reduce, before
        the step began; so is one first seen when the reducer copied a gradient into it, which the buckets DDP
        made before the step (at construction, or at a rebuild during the warm-up) are."""
        storage.update(kind="grad", shard_role="bucket")
        if storage["id"] not in seen_before or not self._allocated_in_step(storage["id"]):
            storage.update(born=0, setup=True)
        for record in self.tensors.values():
            if record["storage"] == storage["id"]:
                record["kind"] = "grad"

    def _allocated_in_step(self, storage_id):
        """Whether an allocation this step recorded made the storage (DDP's rebuild: an `empty` in forward). The
        tape is read once, on from where the last question left it: a step asks once per bucket."""
        for entry in self.tape[self._allocations_read:]:
            if entry["op"] in ALLOCATIONS and entry["output"] is not None:
                outputs = entry["attrs"].get("outputs") or [entry["output"]]
                self._allocated.update(self.tensors[uid]["storage"] for uid in outputs)
        self._allocations_read = len(self.tape)
        return storage_id in self._allocated

    def _note_bucket(self, entry):
        launched = [b for b in self.ddp_buckets if b["entry"] is not None]
        if len(launched) >= len(self.ddp_buckets):
            return
        bucket = self.ddp_buckets[len(launched)]
        bucket["entry"] = entry["index"]
        ready = [self.tensors[a["tensor"]]["name"] for item in self.sweep for a in item["accumulations"]]
        entry["collective"].update(bucket=bucket["index"], gradients=bucket["params"], ready=ready)
        entry["scope"] = f"ddp.bucket[{bucket['index']}]"
        entry["why"] = (f"DDP bucket {bucket['index']} ({len(bucket['params'])} gradients, {bucket['bytes']:,} B) "
                        f"all-reduced over ranks {entry['collective']['group']} once its last gradient was ready; "
                        f"{len(ready)} gradients were ready then")

    # ----- FSDP2's unsharded parameters: storages resized, not freed ---------------------------
    def _as_unsharded_param(self, storage):
        storage.update(kind="param", shard_role="unsharded_param")
        for record in self.tensors.values():
            if record["storage"] == storage["id"]:
                record["kind"] = "param"

    def storage_resized(self, tensor, before):
        """FSDP2's free_storage / alloc_storage on `tensor`: its storage (at address `before`) went, or came
        back (at a new address; a fake tensor's at the same, with bytes again)."""
        if self.phase in ("setup", "done"):
            return
        record = self._live.get(before) if before else None
        if record is not None:
            if record.get("shard_role") != "unsharded_param":
                # first seen as the output of FSDP2's torch.empty at its lazy init (an activation, to the recorder):
                # FSDP2 frees nothing but unsharded parameters this way
                self._as_unsharded_param(record)
            self._on_storage_freed(before, record["id"])
            self._note_unit(tensor, record)
        if tensor.untyped_storage().nbytes():
            role = self._fsdp_buffers.get(id(tensor), "unsharded_param")
            storage = self._storage(tensor, "param" if role == "unsharded_param" else self._kind(), None)
            storage["shard_role"] = role
            self._note_unit(tensor, storage)

    def _note_unit(self, tensor, storage):
        unit = self._buffer_units.get(id(tensor))
        if unit is not None:
            self._storage_units[storage["id"]] = unit


ALLOCATIONS = {"empty", "empty_strided", "new_empty", "new_empty_strided", "empty_like", "zeros", "new_zeros",
               "zeros_like"}


def _propagating(tensor):
    """A tensor of sharding propagation: meta, or fake of a mode other than the fake step's own (torch_fake)."""
    return tensor.is_meta or (isinstance(tensor, FakeTensor) and tensor.fake_mode is not step_fake_mode())


def _faking():
    """Under sharding propagation's FakeTensorMode (not the fake step's own)."""
    step_mode = step_fake_mode()
    return any(isinstance(mode, FakeTensorMode) and mode is not step_mode for mode in _get_current_dispatch_mode_stack())


def _flat_tensors(value):
    return [local(t) for t in tree_leaves(value) if isinstance(t, torch.Tensor)]


def _nbytes(tensors):
    return int(sum(t.numel() * t.element_size() for t in tensors))


def _group_ranks(args):
    """The global ranks of the collective's group: a c10d op's ProcessGroup argument, a functional one's group name."""
    for arg in args:
        try:
            if isinstance(arg, torch.ScriptObject):
                return dist.get_process_group_ranks(dist.ProcessGroup.unbox(arg))
            if isinstance(arg, str):
                from torch.distributed.distributed_c10d import _resolve_process_group
                return dist.get_process_group_ranks(_resolve_process_group(arg))
        except (RuntimeError, ValueError, KeyError, AttributeError):
            continue
    return list(range(dist.get_world_size()))


def _issued_async_from_python():
    """Whether torch.distributed's Python API issued this c10d op with async_op=True (its caller waits for the
    Work later); False for async_op=False and for C++ callers (no distributed_c10d frame on the stack)."""
    frame = sys._getframe(2)
    for _ in range(12):
        if frame is None:
            return False
        if frame.f_code.co_filename.endswith("distributed_c10d.py"):
            return bool(frame.f_locals.get("async_op", False))
        frame = frame.f_back
    return False


def _fsdp_unit(units):
    """The module path of the FSDP2 unit whose FSDPParamGroup (a `self` on the Python stack) issues this collective:
    its hooks run before the recorder's own module hooks, so the recorder's scope is still the parent's."""
    frame = sys._getframe(2)
    for _ in range(40):
        if frame is None:
            return None
        if frame.f_code.co_filename.endswith("_fsdp_param_group.py"):
            unit = units.get(id(frame.f_locals.get("self")))
            if unit is not None:
                return unit
        frame = frame.f_back
    return None
