"""A tape entry (a grad_fn): the op, its backward edges, and the tensors its vjp needs, with their versions.

A saved value keeps its producer, as PyTorch's SavedVariable does: the tape entry that computed it (this very
entry for its own output, held as OWN_OUTPUT so no cycle forms), the leaf it is, or None for a constant. The
plain sweep reads the arrays; under create_graph `unpack_tensors` hands the vjp Tensors over the same storages
whose history is that producer, so what the vjp computes from them is differentiable again.
"""
import itertools

from backend.tape import dual, events, grad_mode

_sequence = itertools.count()

SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call .backward() "
    "or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time "
    "or if you need to access saved tensors after calling backward."
)


class Node:
    """One entry of the Wengert list. `next` holds, per input, the producing Node, the leaf Tensor, or None."""

    __slots__ = ("op", "attrs", "next", "needs", "shapes", "saved", "seq", "output_uid",
                 "retained", "released", "had_saved", "scope", "recipes", "tangents", "phase", "hooks",
                 "__weakref__")

    def __init__(self, op, attrs, inputs, needs):
        self.op = op
        self.attrs = attrs
        self.needs = needs
        self.next = tuple([(t.grad_fn if t.grad_fn is not None else t) if need else None
                           for t, need in zip(inputs, needs)])
        self.shapes = tuple([t.data.shape for t in inputs])
        self.saved = {}
        self.seq = next(_sequence)
        self.output_uid = None
        self.retained = None
        self.released = False
        self.had_saved = False
        self.scope = grad_mode.scope
        self.recipes = None       # saved name -> (Recipe, tensor uid) for outputs recomputed, not pinned
        self.tangents = None      # saved name -> tangent, when recorded inside a JVP sweep (forward-over-reverse)
        self.phase = grad_mode.phase  # "forward", or "backward" for a vjp's own op recorded under create_graph
        self.hooks = None         # gradient hooks registered on this entry's output (hooks.register)

    def name(self):
        return self.op.backward_name

    def save(self, saved_name, array, storage, uid, origin, producer=None, tangent=None):
        """Pin `array` (held in `storage`) for backward, remembering the storage's version right now.

        `producer` is what computed it (see the module docstring); `tangent`, its tangent in a JVP sweep."""
        self.saved[saved_name] = (array, storage, storage.version, origin, uid, producer)
        self.had_saved = True
        if tangent is not None:
            if self.tangents is None:
                self.tangents = {}
            self.tangents[saved_name] = tangent
        if events.active:
            events.emit(events.SAVE, node=self, name=saved_name, uid=uid, storage=storage)

    def save_recipe(self, saved_name, recipe, uid):
        """Keep a way to recompute a value instead of the value (selective recomputation)."""
        if self.recipes is None:
            self.recipes = {}
        self.recipes[saved_name] = (recipe, uid)
        self.had_saved = True
        if events.active:
            events.emit(events.SAVE_RECIPE, node=self, name=saved_name, uid=uid)

    def unpack(self):
        """The saved arrays, after checking each is still the version the forward saw."""
        if self.released and self.had_saved:
            raise RuntimeError(SECOND_BACKWARD)
        values = {}
        for saved_name, (array, storage, version, origin, _uid, _producer) in self.saved.items():
            values[saved_name] = array if storage.version == version else self._checked(array, storage, version, origin)
        if self.recipes:
            cache = {}
            check = lambda array, storage, version: self._checked(array, storage, version, None)  # noqa: E731
            for saved_name, (recipe, _uid) in self.recipes.items():
                values[saved_name] = recipe.evaluate(cache, check)
            values["__recomputed__"] = cache      # keeps the recomputed storages alive through the vjp
        return values

    def unpack_tensors(self):
        """The saved values as Tensors whose history is their producer: what a recorded vjp reads."""
        if self.op.not_recordable:
            raise RuntimeError(
                f"double backward through {self.op.name} is not supported: {self.op.not_recordable}. Its gradient "
                "cannot be differentiated again; call backward without create_graph, or build the model without it.")
        arrays = self.unpack()
        values = {}
        for saved_name, (_array, storage, _version, _origin, uid, producer) in self.saved.items():
            values[saved_name] = _saved_tensor(arrays[saved_name], storage, self, producer, uid)
            if self.tangents and dual.active and saved_name in self.tangents:
                dual.set_tangent(values[saved_name], self.tangents[saved_name])
        if self.recipes:        # recomputed (selective recomputation): over the copy, with the original's producer
            cache = arrays["__recomputed__"]
            for saved_name, (recipe, _uid) in self.recipes.items():
                storage, producer = recipe.storage_in(cache), recipe.producer()
                values[saved_name] = _saved_tensor(arrays[saved_name], storage, self,
                                                   OWN_OUTPUT if producer is self else producer, storage.uid)
        return values

    def saved_as_tensor(self, saved_name):
        """One saved value as a Tensor whose history is its producer (after the version check)."""
        array, storage, version, origin, uid, producer = self.saved[saved_name]
        if self.released and self.had_saved:
            raise RuntimeError(SECOND_BACKWARD)
        if storage.version != version:
            self._checked(array, storage, version, origin)
        return _saved_tensor(array, storage, self, producer, uid)

    def _checked(self, array, storage, version, origin):
        if storage.version != version:
            shape = ", ".join(str(d) for d in array.shape)
            source = f", which is output 0 of {origin}," if origin else ""
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{array.dtype.name} [{shape}]]{source} is at version "
                f"{storage.version}; expected version {version} instead. Hint: the tensor was saved "
                f"by {self.name()}; move the in-place change after backward or make it out-of-place."
            )
        return array

    def release(self):
        """Drop the saved tensors: backward's free. Their storages die here unless something else holds them."""
        self.released = True
        if self.saved or self.recipes:
            if events.active:
                events.emit(events.RELEASE, node=self, uids=[entry[4] for entry in self.saved.values()])
            self.saved = {}
            self.recipes = None


OWN_OUTPUT = "own output"       # a saved value's producer when it is its entry's own output


def _saved_tensor(array, storage, node, producer, uid):
    """A saved value as a Tensor over its storage: the leaf itself, an output of its producer, or a constant."""
    from backend.tape.tensor import SavedTensor as Tensor
    if producer is OWN_OUTPUT:
        if "view" in node.attrs:            # an in-place op on a view (CopySlices): the view of its new base
            from backend.tape.views import output_through_view     # views builds on this module
            return output_through_view(array, storage, uid, node)
        return Tensor.over(array, storage, uid, node)
    if producer is None:
        return Tensor.over(array, storage, uid, None)
    if type(producer) is Node:
        return Tensor.over(array, storage, uid, producer)
    return producer                 # a leaf that requires grad: its gradient must reach its own .grad
