"""The backward scheduler: dependency counts and a ready queue, never recursion; it owns accumulation.

Each node's incoming adjoint waits in a buffer until the last consumer has delivered its share; contributions
to a tensor used twice are summed there (+=). Leaves accumulate into `.grad`, allocated on first use.
"""
import heapq

import numpy as np

from backend.tape import events
from backend.tape.node import Node
from backend.tape.storage import Storage, next_uid


class Adjoint:
    """A gradient array and the storage that holds it (shared when a vjp passes its input through)."""

    __slots__ = ("array", "storage", "exclusive")

    def __init__(self, array, storage, exclusive=False):
        self.array = array
        self.storage = storage
        self.exclusive = exclusive      # nothing else holds this array: a leaf may adopt it without a copy


def _fresh(array, owner_uid):
    storage = Storage(array.nbytes, array.dtype, "grad", next_uid())
    if events.active:
        events.emit("alloc_grad", storage=storage, array=array, owner=owner_uid)
    return Adjoint(array, storage, exclusive=True)


def dependencies(root):
    """How many edges point at each node reachable from `root` (an iterative walk)."""
    counts = {root: 0}
    stack = [root]
    while stack:
        node = stack.pop()
        for parent in node.next:
            if type(parent) is Node:
                if parent in counts:
                    counts[parent] += 1
                else:
                    counts[parent] = 1
                    stack.append(parent)
    return counts


def backward(root_tensor, gradient=None, retain_graph=False, capture=None):
    """Run the adjoint sweep from `root_tensor`, accumulating into leaf `.grad`s.

    `gradient` may be an array or an Adjoint (whose storage is then reused, not copied). With `capture`, a list
    of leaves, their contributions are summed in buffers like a node's instead of landing in `.grad`, and the
    summed Adjoints (None where nothing arrived) are returned: a checkpoint's nested sweep hands them back out.
    """
    if not root_tensor.requires_grad:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    seed_adjoint = _seed(root_tensor, gradient)
    sweep = Sweep(retain_graph, capture)
    root = root_tensor.grad_fn
    if root is None:                       # backward on a leaf: its own .grad gets the seed
        sweep.deliver(root_tensor, seed_adjoint, None)
        return sweep.captured_adjoints()
    sweep.pending = dependencies(root)
    if events.active:
        events.emit("backward_begin", root=root, dependencies=sweep.pending)
    sweep.buffers[root] = seed_adjoint
    del seed_adjoint
    sweep.ready = [(-root.seq, root)]
    while sweep.ready:
        _, node = heapq.heappop(sweep.ready)
        sweep.run_node(node, sweep.buffers.pop(node, None))     # None: no gradient reached it
    return sweep.captured_adjoints()


def _seed(root_tensor, gradient):
    if isinstance(gradient, Adjoint):
        return gradient
    if gradient is None:
        if root_tensor.data.size != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        seed = np.ones_like(root_tensor.data)
    else:
        seed = np.asarray(gradient, dtype=root_tensor.data.dtype).reshape(root_tensor.data.shape)
    return _fresh(seed, root_tensor.uid)


class Sweep:
    """The state of one adjoint sweep: buffers per node, dependency counts, the ready queue."""

    def __init__(self, retain_graph, capture):
        self.retain_graph = retain_graph
        self.buffers = {}
        self.pending = {}
        self.ready = []
        self.capturing = capture is not None
        self.capture = {id(leaf): leaf for leaf in capture or ()}
        self.captured = {}

    def captured_adjoints(self):
        return [self.captured.get(key) for key in self.capture] if self.capturing else None

    def run_node(self, node, adjoint):
        listening = events.active
        if listening:
            events.emit("node_begin", node=node, adjoint=adjoint)
        if adjoint is None:
            grads = (None,) * len(node.next)
        else:
            saved = node.unpack()
            if node.retained is not None:
                _keep_retained(node, adjoint)
            # A checkpoint's vjp takes and returns Adjoints: its nested sweep keeps their storages.
            grads = node.op.vjp(adjoint if node.op.takes_adjoint else adjoint.array, saved, node)
            if len(grads) != len(node.next):
                raise RuntimeError(
                    f"vjp of {node.op.name} returned {len(grads)} gradients for {len(node.next)} inputs")
            del saved
        produced = {}
        for parent, grad in zip(node.next, grads):
            if parent is None or grad is None:
                if type(parent) is Node:
                    self._arrive(parent)
                continue
            self.deliver(parent, _adjoint_for(grad, adjoint, produced, node), node)
        del grads, produced, adjoint
        if not self.retain_graph:
            node.release()
        if listening:
            events.emit("node_end", node=node, ready=[entry[1] for entry in self.ready], pending=self.pending)

    def deliver(self, parent, contribution, node):
        """One vjp output reaching its input: a node's buffer (+= when used twice), a captured leaf, or .grad."""
        if node is not None and events.active:
            events.emit("contribution", node=node, parent=parent, adjoint=contribution)
        if type(parent) is Node:
            existing = self.buffers.get(parent)
            self.buffers[parent] = contribution if existing is None else _sum(parent.output_uid, existing, contribution)
            self._arrive(parent)
        elif id(parent) in self.capture:
            existing = self.captured.get(id(parent))
            self.captured[id(parent)] = contribution if existing is None else _sum(parent.uid, existing, contribution)
        else:
            _accumulate_leaf(parent, contribution, node)

    def _arrive(self, parent):
        self.pending[parent] -= 1
        if self.pending[parent] == 0:
            heapq.heappush(self.ready, (-parent.seq, parent))


def _keep_retained(node, adjoint):
    tensor = node.retained()
    if tensor is not None:
        tensor._grad = adjoint.array.copy() if tensor._grad is None else tensor._grad + adjoint.array


def _adjoint_for(grad, incoming, produced, node):
    """Wrap a vjp output: a pass-through of the incoming adjoint shares its storage, anything else is new."""
    if isinstance(grad, Adjoint):
        return grad
    # Fresh ufunc results own their memory (base is None): only views need the overlap check.
    if incoming is not None and (grad is incoming.array or (
            grad.base is not None and np.may_share_memory(grad, incoming.array))):
        return Adjoint(grad, incoming.storage)
    key = id(grad)
    if key in produced:                         # one array handed to two parents: neither owns it
        produced[key].exclusive = False
        return Adjoint(grad, produced[key].storage)
    produced[key] = _fresh(grad, node.output_uid)
    return produced[key]


def _sum(target_uid, existing, contribution):
    """+= at a tensor used twice: the two shares become one buffer."""
    total = _fresh(existing.array + contribution.array, target_uid)
    if events.active:
        events.emit("accumulate", target=target_uid, parts=(existing, contribution), total=total)
    return total


def _accumulate_leaf(leaf, contribution, node):
    if leaf._grad is None:
        array = contribution.array
        owned = array.base is None and array.flags.writeable and array.dtype == leaf.data.dtype
        if owned and contribution.exclusive:
            leaf.adopt_grad(array, contribution.storage)       # steal the buffer, as AccumulateGrad does
        else:
            copy = np.array(array, dtype=leaf.data.dtype)
            leaf.adopt_grad(copy, Storage(copy.nbytes, copy.dtype, "grad", next_uid()))
        if events.active:
            events.emit("accumulate_leaf", leaf=leaf, parts=(contribution,), first=True)
    else:
        leaf._grad += contribution.array
        if events.active:
            events.emit("accumulate_leaf", leaf=leaf, parts=(contribution,), first=False)
