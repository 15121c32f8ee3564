"""A sweep's meter: an engine listener that adds up FLOPs from the op registry and bytes from allocation events.

FLOPs. Each op that runs counts its registry entry's `flops` (its forward) once. Its derivative counts the same
figure once per input the derivative flows through: a tangent pushed forward from an input that carries one
(forward mode), an adjoint pulled back into an input that needs grad (reverse mode). That is exact for matmul,
which dominates (d(a@b) = da@b + a@db: one product of the forward's size per input), and the usual one-per-input
estimate for the elementwise ops.

Bytes. Live bytes are the storages allocated while metering (values, saved extras, adjoints) minus those freed,
plus forward mode's tangents, each counted while its tensor lives (dual.py keeps them beside the tensor, not in a
Storage). `peak_bytes` is the most held at once; `saved_bytes` the tape's saved storages, each counted once.
Whatever existed before metering began (parameters, the input) is not counted.
"""
from contextlib import contextmanager

from backend.tape import dual, events
from backend.tape.views import View


class SweepMeter:
    def __init__(self):
        self.primal_flops = 0             # the ops' forwards
        self.derivative_flops = 0         # their jvps (tangents) or vjps (adjoints)
        self.live_bytes = 0
        self.peak_bytes = 0
        self._storages = {}               # address -> nbytes, for storages allocated while metering
        self._tangents = {}               # root tensor uid -> its tangent's nbytes
        self._saved = {}                  # address -> nbytes of each saved storage
        self._handlers = events.handlers(self)     # the kinds it counts; the others pass it by

    @property
    def flops(self):
        return self.primal_flops + self.derivative_flops

    @property
    def saved_bytes(self):
        return sum(self._saved.values())

    def hold(self, nbytes):
        """Bytes the sweep's caller keeps (a direction, the Jacobian being filled), counted like an allocation."""
        self._add(nbytes)

    def __call__(self, kind, payload):
        handler = self._handlers.get(kind)
        if handler is not None:
            handler(**payload)

    # ----- bytes ------------------------------------------------------------------------------
    def _add(self, nbytes):
        self.live_bytes += nbytes
        self.peak_bytes = max(self.peak_bytes, self.live_bytes)

    def _allocated(self, storage):
        if storage.address not in self._storages:
            self._storages[storage.address] = storage.nbytes
            self._add(storage.nbytes)

    def on_alloc(self, tensor, storage, node):
        self._allocated(storage)

    def on_alloc_grad(self, storage, array, owner):
        self._allocated(storage)

    def on_alloc_extra(self, uid, storage, array, node, name):
        self._allocated(storage)

    def on_free(self, storage):
        self.live_bytes -= self._storages.pop(storage.address, 0)

    def on_save(self, node, name, uid, storage):
        self._saved[storage.address] = storage.nbytes

    def on_drop(self, tensor):
        self.live_bytes -= self._tangents.pop(tensor.uid, 0)

    # ----- forward mode -----------------------------------------------------------------------
    def on_tangent(self, op, attrs, inputs, output):
        shapes = tuple([t.data.shape for t in inputs])
        flops = int(op.flops(shapes, output.data.shape, attrs))
        self.primal_flops += flops
        carrying = sum(1 for t in inputs if dual.tangent_of(t) is not None)
        self.derivative_flops += flops * carrying
        root = output.base if type(output) is View else output
        tangent = dual.tangent_of(root)
        if tangent is not None:
            self.live_bytes -= self._tangents.get(root.uid, 0)     # an in-place write replaces the tangent
            self._tangents[root.uid] = tangent.nbytes
            self._add(tangent.nbytes)

    # ----- reverse mode -----------------------------------------------------------------------
    def on_record(self, node, inputs, out_shape):
        self.primal_flops += int(node.op.flops(node.shapes, out_shape, node.attrs))

    def on_node_begin(self, node, adjoint):
        if adjoint is not None:                  # the adjoint has the entry's output shape
            flops = int(node.op.flops(node.shapes, adjoint.array.shape, node.attrs))
            self.derivative_flops += flops * sum(node.needs)


@contextmanager
def metering():
    """Listen to the engine with a fresh SweepMeter for the with-block."""
    meter = SweepMeter()
    with events.listening(meter):
        yield meter
