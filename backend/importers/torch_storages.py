"""The torch recorder's storage and tensor records: storages keyed by their address (storage_address: the data
pointer; under FakeTensorMode, which allocates nothing, the storage's own) while alive (views share one), a weakref finalizer on the storage object for when the allocator gets it back (`freed`), one on
each forward Tensor for when the program drops its last one (`dropped`), writes counted per storage, and each
tensor described (statistics, or the values of small tensors) when it is born."""
import functools
import weakref

import torch
from torch._subclasses.fake_tensor import FakeTensor

from backend.importers.torch_ops import op_tensors, written_arguments
from backend.trace.records import SMALL_TENSOR_ELEMENTS, storage_record, tensor_record
from backend.trace.values import ValueTable


class TensorRecords:
    """`tensors` and `storages` (the records backend.trace.document reads) and what keeps them current. Reads
    TorchRecorder's `step`, `phase` and `_busy`; sets its `_freed_in_step`."""

    def _init_records(self, with_values):
        self.with_values = with_values
        self.values = ValueTable()
        self.tensors = {}           # id -> tensor record
        self.storages = {}          # storage id -> storage record (each allocation its own, addresses reused)
        self._live = {}             # storage_address -> storage record, while the allocator has it
        self._views = {}            # (storage_address, offset, shape, stride, dtype) -> latest tensor id
        self._holding = {}          # storage id -> Tensors over it still alive (forward storages only)
        self._watching = []         # a weakref per storage: its callback is the storage's death
        self._described = {}        # _sequence(tensor) -> (version, the description it was given)
        self._writes = {}           # storage id -> how many ops have written into it (see _wrote)
        self._unwritten = {}        # storage id -> [(record, weakref to its Tensor)]: an empty's, until written

    # ----- storages and tensors ----------------------------------------------------------------
    def _storage(self, tensor, kind, scope=None, ptr=None):
        """The record of `tensor`'s storage (at address `ptr` when the caller has read it), made when it is new."""
        if ptr is None:
            ptr = tensor_address(tensor)
        record = self._live.get(ptr) if ptr else None
        if record is None:
            storage = tensor.untyped_storage()
            record = storage_record(len(self.storages), f"0x{ptr:x}", int(storage.nbytes()), kind, self.step,
                                    setup=self.phase == "setup")
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
        return tensor_address(tensor), tensor.storage_offset(), tensor.shape, tensor.stride(), tensor.dtype

    def lookup(self, tensor, key=None):
        """The id of the tensor record `tensor` is (or a view with its exact layout is); None if unseen."""
        uid = self._views.get(key or self._key(tensor))
        if uid is not None and self.storages[self.tensors[uid]["storage"]]["freed"] is None:
            return uid
        return None

    def tensor(self, tensor, kind, name=None, produced_by=None, scope=None, key=None, unwritten=False, **extra):
        """A new tensor record over `tensor`'s storage (created when the storage is new). An `unwritten` one (an
        empty's output: memory as the allocator left it, different run to run), and any view of it made before
        an op writes into its storage, is described after that op, not at birth (see _wrote)."""
        key = key or self._key(tensor)
        known = key[0] in self._live
        storage = self._storage(tensor, kind, scope if kind in ("param", "input") else None, key[0])
        uid = len(self.tensors)
        record = tensor_record(uid, name or f"{self.scope}@{self.step}", storage["kind"], tensor.shape, _dtype_name(tensor.dtype),
                               storage, self.step, produced_by, scope, **extra)
        if known and kind not in ("param", "input"):
            record["view"] = True
        self.tensors[uid] = record
        self._views[key] = uid
        if unwritten or storage["id"] in self._unwritten:
            self._unwritten.setdefault(storage["id"], []).append((record, weakref.ref(tensor)))
        else:
            self._describe(record, tensor)
        self._watch_drop(tensor, storage)
        return uid

    def _describe(self, target, tensor, with_values=None):
        """Statistics (and, with --values, the values of small tensors), read from the tensor at birth."""
        dtype = tensor.dtype
        unreadable = dtype.is_complex or tensor.is_meta or is_fake(tensor)    # no values to read
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
            array = _numpy(data)
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
        record = self._live.get(tensor_address(tensor))
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

    # ----- when the last Tensor over a storage goes (`dropped`, apart from autograd's hold: `freed`) ---
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

    # ----- writes ------------------------------------------------------------------------------
    def _wrote(self, func, args, kwargs):
        """Count a write into each storage `func` mutates (its schema's in-place and out= arguments)."""
        positions, names = written_arguments(func)
        if not positions and not names:
            return
        written = [args[i] for i in positions if i < len(args)] + [kwargs[n] for n in names if n in kwargs]
        for tensor in op_tensors(written):
            record = self._live.get(tensor_address(tensor))
            if record is not None:
                self._writes[record["id"]] = self._writes.get(record["id"], 0) + 1
                if self._unwritten:
                    self._describe_written(record["id"])

    def _describe_written(self, storage_id):
        """An op wrote into an empty's storage: its records (those whose Tensor is alive) are described now."""
        for record, ref in self._unwritten.pop(storage_id, ()):
            tensor = ref()
            if tensor is not None:
                self._describe(record, tensor)


def is_fake(tensor):
    """A FakeTensorMode tensor: shape, dtype, strides and bytes, no memory and no values."""
    return isinstance(tensor, FakeTensor)


def storage_address(storage):
    """Where a storage lives while it does: its data pointer; a fake tensor's storage (FakeTensorMode allocates
    nothing, its data_ptr() is 0) by the address of the storage itself, as unique while it lives."""
    return storage._cdata if storage.device.type == "meta" else storage.data_ptr()


_PLAIN = (torch.Tensor, torch.nn.Parameter)


def tensor_address(tensor):
    """storage_address(tensor.untyped_storage()) without reading the storage's device (a torch.device made per call)
    where the tensor says it: a plain Tensor or Parameter that is not meta has its storage on its own device."""
    storage = tensor.untyped_storage()
    if type(tensor) in _PLAIN and not tensor.is_meta:
        return storage.data_ptr()
    return storage._cdata if storage.device.type == "meta" else storage.data_ptr()


_WIDENED = (torch.bfloat16, torch.float16)     # numpy has no bfloat16: both are read as float32


def _numpy(data):
    """data.numpy(), whose own detach is no op of the step: a plain tensor's skips the dispatch mode (a trip through
    __torch_dispatch__ costs several times the read); a subclass's (DTensor) keeps its own dispatch."""
    if type(data) is torch.Tensor:
        with torch._C._DisableTorchDispatch():
            return data.numpy()
    return data.numpy()


@functools.lru_cache(maxsize=None)
def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")
