"""Storage: the allocation behind one or more tensors, with a synthetic address and a version counter.

Views (reshape, transpose, slicing, detach) share their Storage, so memory is counted once per storage.
Addresses are handed out by a bump allocator that `reset_addresses` rewinds, so a run is deterministic.
"""
import itertools

from backend.tape import events

BASE_ADDRESS = 0x7F21A000
ALIGNMENT = 256

_next_address = BASE_ADDRESS
_uids = itertools.count()


def reset_addresses():
    """Rewind the address space and the tensor ids: call at the start of a run for reproducible traces."""
    global _next_address, _uids
    _next_address = BASE_ADDRESS
    _uids = itertools.count()


def next_uid():
    return next(_uids)


class Storage:
    """One allocation: address, nbytes, dtype, kind (input/param/activation/grad/optimizer), version."""

    __slots__ = ("address", "nbytes", "dtype", "kind", "version", "uid", "__weakref__")

    def __init__(self, nbytes, dtype, kind, uid):
        global _next_address
        self.address = _next_address
        _next_address += -(-max(nbytes, 1) // ALIGNMENT) * ALIGNMENT
        self.nbytes = nbytes
        self.dtype = dtype
        self.kind = kind
        self.version = 0
        self.uid = uid

    @property
    def hex_address(self):
        return f"0x{self.address:x}"

    def __del__(self):
        # CPython frees on the last reference, so this is the moment the bytes really go away.
        if events.active:
            events.emit(events.FREE, storage=self)
