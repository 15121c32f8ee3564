"""Views and in-place ops through them: PyTorch's view base, CopySlices and AsStrided, built once for every op.

A view (reshape, permute, basic indexing that shares its input's storage) remembers its base, the root tensor
that owns the storage, and the chain of view ops that takes the base's value to its own. An in-place op on a
view writes into the base's storage, so it is the base's history that changes: the op's tape entry becomes the
base's grad_fn (CopySlices: its vjp takes the base-shaped adjoint, runs the op's own vjp on the view's region
and writes the result back into that region). Every view of a base whose history changed regenerates its own
grad_fn from the base's (AsStrided) the next time it is read, so a view taken before an in-place op on the
base sees the new history, and a view modified in place sees its own write.
"""
from dataclasses import replace
import numpy as np

from backend.tape import arrays as A
from backend.tape import events
from backend.tape.node import Node
from backend.tape.registry import Op, register
from backend.tape.tensor import SavedTensor, Tensor

VIEW_OF_LEAF = "a view of a leaf Variable that requires grad is being used in an in-place operation."
LEAF = "a leaf Variable that requires grad is being used in an in-place operation."

_GRAD_FN = Tensor.__dict__["grad_fn"]               # Tensor's own slots, under View's properties
_REQUIRES_GRAD = Tensor.__dict__["requires_grad"]


def _synced(slot):
    """A View's property over one of Tensor's slots: read after the view's history is regenerated (View._sync),
    written as it is."""
    def read(view):
        view._sync()
        return slot.__get__(view)
    return property(read, slot.__set__)


class ViewOf:
    """Where a view sits in its base: the base's shape and the view ops from the base's value to the view's."""

    __slots__ = ("base_shape", "chain", "_index")

    def __init__(self, base_shape, chain):
        self.base_shape = tuple(base_shape)
        self.chain = chain
        self._index = None

    def take(self, base_array):
        """The view's value, replayed from the base's."""
        for op, attrs in self.chain:
            base_array = op.forward(attrs, base_array)
        return base_array

    def index(self):
        """For each element of the view, the flat (C-order) position of the base element it shows.

        View ops are logical (numpy's reshape, transpose and basic indexing do not depend on the memory
        layout), so replaying them on an index array gives the mapping whatever the strides were.
        """
        if self._index is None:
            self._index = self.take(np.arange(int(np.prod(self.base_shape)), dtype=np.intp).reshape(self.base_shape))
        return self._index

    def __repr__(self):
        steps = " → ".join(f"{op.name}{_attrs_text(attrs)}" for op, attrs in self.chain)
        return f"view of {list(self.base_shape)}: {steps}"


def _attrs_text(attrs):
    return "(" + ", ".join(f"{k}={v!r}" for k, v in attrs.items()) + ")" if attrs else ""


class View(Tensor):
    """A tensor sharing its base's storage, whose history follows the base's (see the module docstring)."""

    __slots__ = ("base", "chain", "_seen")

    @classmethod
    def of(cls, data, source, op, attrs, requires_grad, grad_fn):
        """The output of view op `op` on `source`: a view of `source`'s base, one step further along."""
        if type(source) is View:
            base, chain = source.base, source.chain + ((op, attrs),)
        else:
            base, chain = source, ((op, attrs),)
        view = cls.__new__(cls)
        view.base, view.chain, view._seen = base, chain, base.grad_fn
        Tensor.__init__(view, data, base.storage, requires_grad, grad_fn)
        if events.active:
            events.emit(events.VIEW, tensor=view, storage=base.storage, node=grad_fn)
        return view

    def _sync(self):
        """Regenerate this view's history from its base's if an in-place op changed the base's since."""
        base = self.base
        if base.grad_fn is self._seen:
            return
        self._seen = base.grad_fn
        old = _GRAD_FN.__get__(self)
        if base.requires_grad:
            node = Node(AS_STRIDED, {"view": ViewOf(base.data.shape, self.chain)}, (base,), (True,))
            node.output_uid = self.uid
            if events.active:
                events.emit(events.RECORD, node=node, inputs=(base,), out_shape=self.data.shape)
            move_retained(old, node, self)
            _GRAD_FN.__set__(self, node)
            _REQUIRES_GRAD.__set__(self, True)

    grad_fn = _synced(_GRAD_FN)
    requires_grad = _synced(_REQUIRES_GRAD)


def move_retained(old, node, tensor):
    """retain_grad() follows the tensor to its new history: the gradient kept is that of the value after the write."""
    if old is not None and old.retained is not None and old.retained() is tensor:
        node.retained, old.retained = old.retained, None


def rebase(tensor, node):
    """Make `node` the history of `tensor` (a root: never a View) after an in-place op was recorded on it."""
    move_retained(tensor.grad_fn, node, tensor)
    tensor.grad_fn, tensor.requires_grad = node, True
    node.output_uid = tensor.uid


def edge_to(tensor):
    """What a tape entry reading `tensor` points back at: its grad_fn, itself if a leaf that requires grad, or None."""
    if tensor.grad_fn is not None:
        return tensor.grad_fn
    return tensor if tensor.requires_grad else None


# ============================== the two backward shapes of a view ==============================

def _scatter_vjp(g, s, node):
    """AsStrided: the view's adjoint lands in its region of a zero base-shaped adjoint."""
    view = node.attrs["view"]
    return (_into_region(g, view),)


def _into_region(g, view):
    """A zero base-shaped array holding `g` in the view's region (each base element appears once in a view)."""
    return A.reshape(A.scatter_add(g, view.index(), (int(np.prod(view.base_shape)),)), view.base_shape)


AS_STRIDED = register(Op(
    "as_strided", "movement", ("base",), view=True,
    forward=lambda attrs, base: attrs["view"].take(base),
    vjp=_scatter_vjp, jvp=lambda t, v, attrs: attrs["view"].take(t[0]),
    flops=lambda shapes, out_shape, attrs: 0, backward="AsStridedBackward",
    why="a view whose base was changed in place reads the base's new history: no bytes, its vjp scatters.",
))


def output_through_view(array, storage, uid, node):
    """What a CopySlices entry saved of its own output (the written view's values), as a Tensor for a recorded
    vjp: the entry's output is the base, so the value's history is AsStrided of it, as torch regenerates it."""
    view = node.attrs["view"]
    history = Node(AS_STRIDED, {"view": view}, [_BaseOf(node, view.base_shape, array.dtype)], (True,))
    history.output_uid = uid
    return SavedTensor.over(array, storage, uid, history)


class _BaseOf:
    """The two attributes a Node reads from an input: the base the CopySlices entry produced, by its shape."""
    __slots__ = ("grad_fn", "data")

    def __init__(self, node, shape, dtype):
        self.grad_fn = node
        self.data = np.broadcast_to(np.zeros((), dtype=dtype), shape)       # a shape, no bytes


_through = {}        # id(op) -> (op, its CopySlices variant)


def through_view(op):
    """`op` applied in place to a view: the entry becomes its base's history (CopySlices)."""
    known = _through.get(id(op))
    if known is None or known[0] is not op:
        known = _through[id(op)] = (op, _copy_slices(op))
    return known[1]


def _copy_slices(op):
    def vjp(g, saved, node):
        view = node.attrs["view"]
        index = view.index()
        grads = op.vjp(A.take(A.reshape(g, (-1,)), index), saved, node)   # the op's own vjp, on the view's part
        if not node.needs[0]:
            return (None, *grads[1:])
        outside = np.ones(view.base_shape, dtype=bool)
        outside.reshape(-1)[index] = False
        grad = A.where(outside, g)                    # the base's adjoint, outside the region, passes through
        if grads[0] is not None:                      # None: the write replaced the old values
            grad = grad + _into_region(grads[0], view)
        return (grad, *grads[1:])
    return replace(op, vjp=vjp, backward="CopySlices")
