"""The backward scheduler: dependency counts and a ready queue, never recursion; it owns accumulation.

Each node's incoming adjoint waits in a buffer until the last consumer has delivered its share; contributions
to a tensor used twice are summed there (+=). Leaves accumulate into `.grad`, allocated on first use.

A sweep runs on one of two kinds of adjoint. On the plain path they are ndarrays and the vjps run on the saved
arrays. Under create_graph (or inside a JVP sweep: forward-over-reverse) they are Tensors: each vjp reads its
saved values as Tensors whose history is their producer (Node.unpack_tensors) and, with create_graph, its own
ops are recorded on the tape (phase "backward"), so the gradients it hands out can be differentiated again.
"""
import heapq

import numpy as np

from backend.tape import dual, events, grad_mode, hooks
from backend.tape.node import Node
from backend.tape.storage import Storage, next_uid
from backend.tape.tensor import SavedTensor, Tensor


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
        events.emit(events.ALLOC_GRAD, storage=storage, array=array, owner=owner_uid)
    return Adjoint(array, storage, exclusive=True)


def dependencies(roots, stops=()):
    """How many edges point at each node reachable from `roots` (a node or a list of them; an iterative walk).
    The walk does not go past a node in `stops` (a nested sweep's boundary: its gradient is captured there)."""
    roots = [roots] if type(roots) is Node else list(roots)
    counts = {root: 0 for root in roots}
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node in stops:
            continue
        for parent in node.next:
            if type(parent) is Node:
                if parent in counts:
                    counts[parent] += 1
                else:
                    counts[parent] = 1
                    stack.append(parent)
    return counts


_running = []          # the sweeps running now, innermost last: a checkpoint's nested sweep reads its outer one


def running_sweep():
    """The innermost sweep running now, or None."""
    return _running[-1] if _running else None


def backward(root_tensor, gradient=None, retain_graph=None, capture=None, create_graph=False, accumulate=True):
    """Run the adjoint sweep from `root_tensor`, accumulating into leaf `.grad`s.

    `gradient` may be an array, a Tensor or an Adjoint (whose storage is then reused, not copied). With
    `capture`, a list of tensors (leaves, or non-leaves keyed by their grad_fn's output uid), their gradients are
    summed in buffers like a node's instead of landing in `.grad`, and the summed Adjoints (None where nothing
    arrived) are returned: a checkpoint's nested sweep hands them back out, and `grad()` returns them. With
    `accumulate=False` no `.grad` is touched and only the entries leading to a captured tensor run.
    `retain_graph` defaults to `create_graph`, as in PyTorch.
    """
    return backward_many([root_tensor], [gradient], retain_graph, capture, create_graph, accumulate)


def backward_many(roots, gradients, retain_graph=None, capture=None, create_graph=False, accumulate=True,
                  outer=None):
    """One sweep from several outputs at once, each seeded with its gradient (see `backward`).

    `outer` makes this a checkpoint's nested sweep inside that running sweep: it stops at the captured tensors'
    producers (their gradients go back to the checkpoint entry), records its vjps when the outer one does, and
    hands every other leaf's gradient to the outer sweep, which accumulates or captures it as its caller asked."""
    if retain_graph is None:
        retain_graph = create_graph
    for index, root_tensor in enumerate(roots):
        if not root_tensor.requires_grad:
            raise RuntimeError(f"element {index} of tensors does not require grad and does not have a grad_fn")
    sweep = Sweep(retain_graph, capture, create_graph, accumulate, outer)
    _running.append(sweep)
    try:
        return _sweep(sweep, roots, gradients)
    finally:
        _running.pop()


def _sweep(sweep, roots, gradients):
    nodes = []
    for root_tensor, gradient in zip(roots, gradients):
        seed_adjoint = _seed(root_tensor, gradient, sweep.on_tape)
        root = root_tensor.grad_fn
        if root is None:                   # backward on a leaf: its own .grad gets the seed
            sweep.deliver(root_tensor, seed_adjoint, None)
        else:
            existing = sweep.buffers.get(root)
            if existing is None:
                sweep.buffers[root] = seed_adjoint
                nodes.append(root)
            else:                          # two outputs of one entry (or one output twice): their seeds add up
                sweep.buffers[root] = sweep.sum(root.output_uid, existing, seed_adjoint)
        del seed_adjoint
    if not nodes:
        sweep.deliver_hooked_leaves()
        return sweep.captured_adjoints()
    sweep.pending = dependencies(nodes, sweep.stops)
    if not sweep.accumulate:
        sweep.wanted_uids = sweep.wanted()
        sweep.useful = _leading_to(sweep.pending, sweep.wanted_uids)
    if events.active:
        events.emit(events.BACKWARD_BEGIN, root=nodes[0], dependencies=sweep.pending)
    sweep.ready = [(-root.seq, root) for root in nodes if sweep.pending[root] == 0]
    heapq.heapify(sweep.ready)
    while sweep.ready:
        _, node = heapq.heappop(sweep.ready)
        sweep.run_node(node, sweep.buffers.pop(node, None))     # None: no gradient reached it
    sweep.deliver_hooked_leaves()
    return sweep.captured_adjoints()


def _seed(root_tensor, gradient, on_tape):
    if isinstance(gradient, Adjoint):
        return gradient
    if on_tape:
        if isinstance(gradient, Tensor):    # a seed that requires grad is itself differentiated through
            return Adjoint(gradient, gradient.storage)
        seed = _seed_array(root_tensor, gradient)
        held = Tensor.allocate(seed, "grad", name=f"d{root_tensor.name or 'output'}")
        return Adjoint(held, held.storage)
    return _fresh(_seed_array(root_tensor, gradient), root_tensor.uid)


def _seed_array(root_tensor, gradient):
    if gradient is None:
        if root_tensor.data.size != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        return np.ones_like(root_tensor.data)
    if isinstance(gradient, Tensor):
        gradient = gradient.data
    shape, wanted = np.shape(gradient), root_tensor.data.shape
    if shape != wanted and not (np.size(gradient) == 1 and root_tensor.data.size == 1):
        raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {list(shape)} and output[0] has a "
                           f"shape of {list(wanted)}.")
    return np.array(gradient, dtype=root_tensor.data.dtype).reshape(wanted)


def _leading_to(pending, capture):
    """The nodes whose vjp must run for a captured tensor to get its gradient: those with a path to one.

    A parent is always recorded before its consumers (lower seq), so one pass in seq order settles each node
    after all of its parents."""
    useful = set()
    for node in sorted(pending, key=lambda n: n.seq):
        for parent in node.next:
            if parent is None:
                continue
            if type(parent) is Node:
                if parent in useful or parent.output_uid in capture:
                    useful.add(node)
                    break
            elif parent.uid in capture:
                useful.add(node)
                break
    return useful


class Sweep:
    """The state of one adjoint sweep: buffers per node, dependency counts, the ready queue."""

    def __init__(self, retain_graph, capture, create_graph=False, accumulate=True, outer=None):
        self.retain_graph = retain_graph
        self.create_graph = create_graph
        self.outer = outer
        self.on_tape = create_graph or dual.active      # the adjoints are Tensors and the vjps run on Tensors
        self.accumulate = accumulate
        self.useful = None                               # with accumulate=False: the nodes worth running
        self.buffers = {}
        self.pending = {}
        self.ready = []
        self.capturing = capture is not None
        self.capture = {_capture_key(t): t for t in capture or ()}
        self.captured = {}
        self.hooked_leaves = {}                          # leaf -> its summed gradient, hooked when the sweep ends
        # A nested sweep ends at its captured tensors' producers: their vjps belong to the outer sweep.
        self.stops = {t.grad_fn for t in capture or () if t.grad_fn is not None} if outer is not None else ()

    def wanted(self):
        """The uids whose gradients this sweep must produce: its own captures, and its outer sweep's."""
        return self.capture.keys() | (self.outer.wanted() if self.outer is not None else set())

    def captured_adjoints(self):
        return [self.captured.get(key) for key in self.capture] if self.capturing else None

    def sum(self, target_uid, existing, contribution):
        return _sum_on_tape(target_uid, existing, contribution) if self.on_tape else _sum(target_uid, existing, contribution)

    def run_node(self, node, adjoint):
        if self.on_tape:        # the vjp, the += of its shares and .grad: all recorded as this entry's backward
            with grad_mode.recording_backward(self.create_graph, node.scope):
                self._run_node(node, adjoint)
        else:
            self._run_node(node, adjoint)

    def _run_node(self, node, adjoint):
        listening = events.active
        if listening:
            events.emit(events.NODE_BEGIN, node=node, adjoint=adjoint)
        if adjoint is not None and node.hooks:
            adjoint = self._hooked(node.hooks, adjoint, node.output_uid)
        if adjoint is not None and node.output_uid in self.capture:
            self.captured[node.output_uid] = adjoint
        if node in self.stops:
            return                      # the boundary of a nested sweep: the outer sweep runs this node
        if adjoint is None or (self.useful is not None and node not in self.useful):
            grads = (None,) * len(node.next)
        elif self.useful is not None:
            grads = self._pruned_vjp(node, adjoint)
        elif self.on_tape:
            grads = self._recorded_vjp(node, adjoint)
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
            contribution = (_tensor_adjoint(grad, adjoint) if self.on_tape
                            else _adjoint_for(grad, adjoint, produced, _gradient_owner(parent)))
            self.deliver(parent, contribution, node)
        del grads, produced, adjoint
        if node.op.takes_adjoint and "rebase_to" in node.attrs:      # see checkpoint._recompute_vjp
            node.next, node.needs = (node.attrs.pop("rebase_to").grad_fn,), (True,)
        if not self.retain_graph:
            node.release()
        if listening:
            events.emit(events.NODE_END, node=node, ready=[entry[1] for entry in self.ready], pending=self.pending)

    def deliver(self, parent, contribution, node):
        """One vjp output reaching its input: a node's buffer (+= when used twice), a captured leaf, or .grad."""
        if node is not None and events.active:
            events.emit(events.CONTRIBUTION, node=node, parent=parent, adjoint=contribution)
        if type(parent) is Node:
            existing = self.buffers.get(parent)
            self.buffers[parent] = contribution if existing is None else self.sum(parent.output_uid, existing, contribution)
            self._arrive(parent)
        else:
            self._leaf_gets(parent, contribution, node)

    def _leaf_gets(self, parent, contribution, node):
        """A leaf's gradient: to the outer sweep from a nested one (a parameter inside a checkpoint region), into a
        hooked leaf's buffer, or captured / accumulated."""
        if self.outer is not None and parent.uid not in self.capture:
            self.outer._leaf_gets(parent, contribution, node)
        elif hooks.of_leaf(parent) is not None:
            existing = self.hooked_leaves.get(parent)
            self.hooked_leaves[parent] = (contribution, node) if existing is None else (
                self.sum(parent.uid, existing[0], contribution), node)
        else:
            self._deliver_to_leaf(parent, contribution, node)

    def deliver_hooked_leaves(self):
        """A hooked leaf's gradient, summed over everything that reached it, goes through its hooks, then on."""
        while self.hooked_leaves:
            leaf, (total, node) = self.hooked_leaves.popitem()
            self._deliver_to_leaf(leaf, self._hooked(hooks.of_leaf(leaf) or {}, total, leaf.uid), node)

    def _hooked(self, table, adjoint, owner_uid):
        """The adjoint after the tensor's hooks: replaced by what a hook returned, in a storage of its own."""
        if self.on_tape:
            replaced = hooks.run(table, adjoint.array)
            if replaced is None:
                return adjoint
            if not isinstance(replaced, Tensor):
                replaced = Tensor.allocate(np.asarray(replaced, dtype=adjoint.array.dtype), "grad")
            return Adjoint(replaced, replaced.storage)
        over = SavedTensor.over(adjoint.array, adjoint.storage, adjoint.storage.uid, None)   # no new bytes
        replaced = hooks.run(table, over)
        if replaced is None:
            return adjoint
        return _fresh(np.array(getattr(replaced, "data", replaced), dtype=adjoint.array.dtype), owner_uid)

    def _deliver_to_leaf(self, parent, contribution, node):
        if parent.uid in self.capture:
            existing = self.captured.get(parent.uid)
            self.captured[parent.uid] = contribution if existing is None else self.sum(parent.uid, existing, contribution)
        elif self.accumulate:
            (_accumulate_leaf_on_tape if self.on_tape else _accumulate_leaf)(parent, contribution, node)

    def _pruned_vjp(self, node, adjoint):
        """The vjp asked only for the gradients that lead to a captured tensor (as PyTorch's grad() does): with
        create_graph, a weight's gradient nobody asked for would otherwise be recorded and never swept."""
        needs, wanted = node.needs, self.wanted_uids
        node.needs = tuple([need and (type(parent) is Node and (parent in self.useful or parent.output_uid in wanted)
                                      or type(parent) is not Node and parent is not None and parent.uid in wanted)
                            for need, parent in zip(needs, node.next)])
        try:
            if self.on_tape:
                return self._recorded_vjp(node, adjoint)
            saved = node.unpack()
            return node.op.vjp(adjoint if node.op.takes_adjoint else adjoint.array, saved, node)
        finally:
            node.needs = needs

    def _recorded_vjp(self, node, adjoint):
        """The node's vjp on Tensors (run_node has set the grad mode): recorded when create_graph, carrying
        tangents in a JVP sweep."""
        if node.op.takes_adjoint:           # a checkpoint re-runs its region and records its own nested sweep
            return node.op.vjp(adjoint, None, node)
        saved = node.unpack_tensors()
        if node.retained is not None:
            _keep_retained(node, adjoint)
        grads = node.op.vjp(adjoint.array, saved, node)
        if len(grads) != len(node.next):
            raise RuntimeError(f"vjp of {node.op.name} returned {len(grads)} gradients for {len(node.next)} inputs")
        return grads

    def _arrive(self, parent):
        self.pending[parent] -= 1
        if self.pending[parent] == 0:
            heapq.heappush(self.ready, (-parent.seq, parent))


def _capture_key(tensor):
    """A captured tensor is found by the uid of what its gradient arrives at: its grad_fn's output, or itself."""
    node = tensor.grad_fn
    return node.output_uid if node is not None else tensor.uid


def _keep_retained(node, adjoint):
    tensor = node.retained()
    if tensor is not None:
        kept = adjoint.array if isinstance(adjoint.array, Tensor) else adjoint.array.copy()
        tensor._grad = kept if tensor._grad is None else tensor._grad + adjoint.array


def _tensor_adjoint(grad, incoming):
    """A recorded vjp's output as an Adjoint: a Tensor (a plain array, e.g. a zero, becomes a constant one)."""
    if isinstance(grad, Adjoint):           # a checkpoint's nested sweep hands back its captured Adjoints
        return grad
    if not isinstance(grad, Tensor):
        grad = Tensor.allocate(np.asarray(grad), "grad")
    return Adjoint(grad, grad.storage)


def _sum_on_tape(target_uid, existing, contribution):
    """+= at a tensor used twice, as a recorded add: the sum is itself differentiable."""
    total = existing.array + contribution.array
    total = Adjoint(total, total.storage)
    if events.active:
        events.emit(events.ACCUMULATE, target=target_uid, parts=(existing, contribution), total=total)
    return total


def _accumulate_leaf_on_tape(leaf, contribution, node):
    """Under create_graph a leaf's .grad is a Tensor with a history, as in PyTorch."""
    first = leaf._grad is None
    total = contribution.array if first else leaf._grad + contribution.array
    if not isinstance(total, Tensor):           # an earlier plain .grad plus a recorded contribution
        total = Tensor.allocate(np.asarray(total), "grad")
    leaf.adopt_grad(total, total.storage)
    if events.active:
        events.emit(events.ACCUMULATE_LEAF, leaf=leaf, parts=(contribution,), first=first)


def _gradient_owner(parent):
    """The uid of the tensor a gradient delivered to `parent` is the gradient of: its output, or the leaf."""
    return parent.output_uid if type(parent) is Node else parent.uid


def _adjoint_for(grad, incoming, produced, owner_uid):
    """Wrap a vjp output (the gradient of tensor `owner_uid`): a pass-through of the incoming adjoint shares its
    storage, anything else is new."""
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
    produced[key] = _fresh(grad, owner_uid)
    return produced[key]


def _sum(target_uid, existing, contribution):
    """+= at a tensor used twice: the two shares become one buffer."""
    total = _fresh(existing.array + contribution.array, target_uid)
    if events.active:
        events.emit(events.ACCUMULATE, target=target_uid, parts=(existing, contribution), total=total)
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
            events.emit(events.ACCUMULATE_LEAF, leaf=leaf, parts=(contribution,), first=True)
    else:
        leaf._grad += contribution.array
        if events.active:
            events.emit(events.ACCUMULATE_LEAF, leaf=leaf, parts=(contribution,), first=False)
