"""Tensor: an ndarray over a Storage, with requires_grad, grad_fn and a lazily allocated .grad."""
import weakref
from operator import attrgetter

import numpy as np

from backend.tape import events
from backend.tape.storage import Storage, next_uid


class Tensor:
    """A node's value. Leaves (no grad_fn) that require grad collect `.grad`; everything else is on the tape."""

    __slots__ = ("data", "storage", "_requires_grad", "grad_fn", "name", "uid",
                 "_grad", "_grad_storage", "recipe", "__weakref__")
    __array_ufunc__ = None          # numpy defers `ndarray op Tensor` to our reflected operators

    def __init__(self, data, storage, requires_grad=False, grad_fn=None, name=None):
        self.data = data
        self.storage = storage
        self._requires_grad = requires_grad      # trusted here: ops only mark float outputs; users go through the setter
        self.grad_fn = grad_fn
        self.name = name
        self.uid = next_uid()
        self._grad = None
        self._grad_storage = None
        self.recipe = None          # set when selective recomputation re-derives this value in backward

    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        """torch's rules: only floating-point tensors may require grad, and only a leaf's flag may be turned off."""
        _check_can_require_grad(self.data, value)
        if not value and self.grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use a "
                               "computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        self._requires_grad = bool(value)

    # ----- construction -------------------------------------------------------------------------
    @classmethod
    def allocate(cls, data, kind, requires_grad=False, grad_fn=None, name=None):
        """A tensor over a fresh storage (an allocation the memory timeline counts)."""
        storage = Storage(data.nbytes, data.dtype, kind, None)
        tensor = cls(data, storage, requires_grad, grad_fn, name)
        storage.uid = tensor.uid
        if events.active:
            events.emit(events.ALLOC, tensor=tensor, storage=storage, node=grad_fn)
        return tensor

    @classmethod
    def view_of(cls, data, base, requires_grad=False, grad_fn=None, name=None):
        """A tensor sharing `base`'s storage: no new bytes."""
        tensor = cls(data, base.storage, requires_grad, grad_fn, name)
        if events.active:
            events.emit(events.VIEW, tensor=tensor, storage=base.storage, node=grad_fn)
        return tensor

    def __del__(self):
        # The last Python reference to this tensor is gone; its storage may live on in the tape's saved values.
        if events.active:
            events.emit(events.DROP, tensor=self)

    # ----- autograd surface ---------------------------------------------------------------------
    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is None:
            self._grad, self._grad_storage = None, None
            return
        array = np.asarray(value)
        self.adopt_grad(array, Storage(array.nbytes, array.dtype, "grad", next_uid()))

    def adopt_grad(self, array, storage):
        """Make `array` (held in `storage`) this leaf's .grad: the engine's first accumulation."""
        self._grad, self._grad_storage = array, storage
        if events.active:
            events.emit(events.GRAD, tensor=self, storage=storage)

    def register_hook(self, hook):
        """Call `hook(grad)` with this tensor's gradient in backward; a returned Tensor replaces it (torch's)."""
        from backend.tape import hooks              # hooks reads Tensors' grad_fn: it builds on this module
        return hooks.register(self, hook)

    def retain_grad(self):
        """Keep this non-leaf's gradient in .grad after backward (intermediate gradients are freed otherwise)."""
        if self.grad_fn is not None:
            self.grad_fn.retained = weakref.ref(self)

    def backward(self, gradient=None, retain_graph=None, create_graph=False):
        """Accumulate this tensor's gradient into the leaves' .grad; with create_graph=True the sweep is recorded
        (the .grads are Tensors with a history) and the graph is kept (retain_graph defaults to create_graph)."""
        from backend.tape.engine import backward
        backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph)

    def detach(self):
        return Tensor.view_of(self.data, self, name=self.name)

    # ----- numpy interop and description --------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        # numpy-first: np.asarray works even on a tensor that requires grad (torch would ask for .detach())
        if dtype is not None and dtype != self.data.dtype:
            return self.data.astype(dtype)
        return self.data.copy() if copy else self.data

    # the values' own: t.shape is t.data.shape (an attrgetter reads it without a Python frame)
    shape = property(attrgetter("data.shape"))
    dtype = property(attrgetter("data.dtype"))
    ndim = property(attrgetter("data.ndim"))
    size = property(attrgetter("data.size"))

    def item(self):
        if self.data.size != 1:
            raise RuntimeError(f"a Tensor with {self.data.size} elements cannot be converted to Scalar")
        return self.data.item()

    # ----- Python scalars, with torch's rules ---------------------------------------------------
    def _one_element(self):
        if self.data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.data.item()

    def __float__(self):
        return float(self._one_element())

    def __int__(self):
        return int(self._one_element())

    def __index__(self):
        if self.data.size != 1 or self.data.dtype.kind not in "iub":
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.data.item())

    def __bool__(self):
        if self.data.size == 1:
            return bool(self.data.item())
        amount = "no values" if self.data.size == 0 else "more than one value"
        raise RuntimeError(f"Boolean value of Tensor with {amount} is ambiguous")

    def __format__(self, spec):
        if self.data.ndim == 0:
            return self.data.item().__format__(spec)
        if spec:
            raise TypeError("unsupported format string passed to Tensor.__format__")
        return repr(self)

    def numpy(self):
        return self.data

    def __len__(self):
        if self.data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return len(self.data)

    def __repr__(self):
        fn = f", grad_fn=<{self.grad_fn.name()}>" if self.grad_fn is not None else ""
        req = ", requires_grad=True" if self.requires_grad and self.grad_fn is None else ""
        return f"tensor({np.array2string(self.data, precision=4, threshold=20)}{req}{fn})"


class SavedTensor(Tensor):
    """A saved value handed to a recorded vjp: the saved tensor again (its uid), over its storage, with its
    producer as grad_fn. It adds no bytes and no holder: the tape already holds the storage."""

    __slots__ = ()

    @classmethod
    def over(cls, array, storage, uid, grad_fn):
        saved = cls(array, storage, grad_fn is not None, grad_fn)
        saved.uid = uid
        return saved

    def __del__(self):
        pass


def tensor(data, requires_grad=False, name=None):
    """A leaf input. A numpy array keeps its dtype; Python floats become float32, as in PyTorch."""
    array = _as_array(data)
    _check_can_require_grad(array, requires_grad)
    return Tensor.allocate(array, "input", requires_grad=requires_grad, name=name)


def parameter(data, name=None, requires_grad=True):
    """A leaf counted as a parameter; it requires grad unless frozen (torch's `p.requires_grad_(False)`)."""
    array = _as_array(data)
    _check_can_require_grad(array, requires_grad)
    return Tensor.allocate(array, "param", requires_grad=requires_grad, name=name)


def constant_leaf(array):
    """A Python number or array used as an operand: a constant leaf, named by its value when it is one number
    (`const 0.125`: two constants in one graph are told apart), else `const`."""
    name = f"const {array.item():.4g}" if array.ndim == 0 and array.dtype.kind in "biuf" else "const"
    return Tensor.allocate(array, "input", name=name)


def _check_can_require_grad(array, requires_grad):
    """Checked before the tensor exists: an allocation's listeners read requires_grad as it is born."""
    if requires_grad and not differentiable(array.dtype):
        raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")


def differentiable(dtype) -> bool:
    """Floating point or complex, ml_dtypes' bfloat16 and float8 kinds included (numpy files them as void)."""
    dtype = np.dtype(dtype)
    return dtype.kind in "fc" or dtype.name.startswith(("bfloat", "float"))


def _as_array(data):
    """A numpy array or scalar keeps its dtype; Python floats (and lists of them) become float32."""
    if isinstance(data, Tensor):
        return data.data
    if isinstance(data, (np.ndarray, np.generic)):
        return np.asarray(data)
    array = np.asarray(data)
    return array.astype(np.float32) if array.dtype == np.float64 else array
