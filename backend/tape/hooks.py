"""Gradient hooks: torch's Tensor.register_hook, to watch or replace the gradient of one tensor as backward runs.

`hook(grad)` is called with the gradient of the tensor it was registered on, a Tensor, and may return a Tensor
(or array) of the same shape to use instead. A non-leaf's hooks live on its grad_fn and run when that entry's
adjoint is complete, before its vjp reads it (and before grad() captures it). A leaf's run on the sum of what
reached it, before it lands in `.grad` (torch's AccumulateGrad sums its inputs first): the engine holds a hooked
leaf's contributions in a buffer and hooks them once the sweep is done.
"""
import weakref

import numpy as np

_leaf_hooks = weakref.WeakKeyDictionary()      # leaf Tensor -> {handle id: hook}
_ids = iter(range(1, 1 << 62))


class RemovableHandle:
    """What register_hook returns: `handle.remove()` takes the hook off again."""

    __slots__ = ("_table", "_id")

    def __init__(self, table, hook_id):
        self._table, self._id = table, hook_id

    def remove(self):
        self._table.pop(self._id, None)


def register(tensor, hook):
    if not callable(hook):
        raise TypeError("register_hook takes a callable: hook(grad) -> Tensor or None")
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    node = tensor.grad_fn
    if node is None:
        table = _leaf_hooks.setdefault(tensor, {})
    else:
        if node.hooks is None:
            node.hooks = {}
        table = node.hooks
    hook_id = next(_ids)
    table[hook_id] = hook
    return RemovableHandle(table, hook_id)


def of_leaf(leaf):
    """The hooks registered on `leaf`, or None (a weak lookup: hookless leaves cost one dict probe)."""
    table = _leaf_hooks.get(leaf)
    return table if table else None


def run(table, gradient):
    """Each hook in registration order on `gradient` (a Tensor), each seeing the last one's replacement.
    Returns the replacement (a Tensor or an array), or None when no hook returned one."""
    replaced = None
    current = gradient
    for hook in list(table.values()):
        result = hook(current)
        if result is None:
            continue
        if np.shape(getattr(result, "data", result)) != np.shape(current.data):
            raise RuntimeError(f"hook '{getattr(hook, '__name__', 'hook')}' has changed the size of value")
        current = replaced = result
    return replaced
