"""Applying an op: run its forward, and when an input requires grad, append a tape entry and save what its vjp needs.

Inside a JVP sweep (dual.active) an op instead carries its inputs' tangents to its output through its jvp, and
records and saves nothing.
"""
import numpy as np

from backend.tape import amp, dual, events, grad_mode, remat, views
from backend.tape.node import OWN_OUTPUT, Node
from backend.tape.registry import plan_of, run_forward
from backend.tape.storage import Storage, next_uid
from backend.tape.tensor import Tensor
from backend.tape.views import View

NO_ATTRS = {}


def apply(op, inputs, attrs=NO_ATTRS):
    """Run `op` on `inputs` (Tensors); record it on the tape if any input requires grad and grad mode is on."""
    if amp.active:
        inputs = amp.inputs_for(op, inputs)
    arrays = [t.data for t in inputs]
    out, extras = run_forward(op, attrs, arrays)
    if grad_mode.enabled:
        needs = tuple([t.requires_grad for t in inputs])
        recording = True in needs
        if dual.active and not recording:
            return _dual_output(op, attrs, inputs, arrays, out, extras)
    elif dual.active:
        return _dual_output(op, attrs, inputs, arrays, out, extras)
    else:
        recording = False
        if grad_mode.watching:
            grad_mode.note_grad(inputs)
    if not recording:
        if events.active:
            events.emit(events.OP, op=op, attrs=attrs)      # an unrecorded op: a step of its own in a trace
        return _output(op, attrs, out, inputs, None)
    node = Node(op, attrs, inputs, needs)
    if events.active:
        events.emit(events.RECORD, node=node, inputs=inputs, out_shape=out.shape)
    output = _output(op, attrs, out, inputs, node)
    node.output_uid = output.uid
    if dual.active:                                 # recorded inside a JVP sweep (forward-over-reverse)
        _carry_tangent(op, attrs, inputs, arrays, out, extras, output)
    if remat.enabled:
        remat.on_record(node, inputs, output)       # before saving: an op saving its own output keeps a recipe
    _save(node, inputs, output, extras)
    return output


def apply_inplace(op, target, others, attrs=NO_ATTRS):
    """Run `op` writing into `target`'s storage; bump its version and, if recording, rebase its history.

    On a view, the history rebased is the base's (views.through_view), and the view's own is regenerated from it.
    """
    inputs = [target, *others]
    needs = tuple([t.requires_grad for t in inputs])
    recording = grad_mode.enabled and True in needs
    if dual.active and not recording:
        return _dual_inplace(op, target, others, attrs)
    base = target.base if type(target) is View else None
    if recording:
        if base is None and needs[0] and target.grad_fn is None:
            raise RuntimeError(views.LEAF)
        if base is not None and base.requires_grad and base.grad_fn is None:
            raise RuntimeError(views.VIEW_OF_LEAF)
    elif grad_mode.watching:
        grad_mode.note_grad(inputs)
    if not recording:
        _write(op, attrs, target, inputs)
        return target
    if base is None:
        node = Node(op, attrs, inputs, needs)
    else:
        node = Node(views.through_view(op), {**attrs, "view": views.ViewOf(base.data.shape, target.chain)},
                    inputs, needs)
        node.next = (views.edge_to(base), *node.next[1:])    # the region's old values came from the base's history
    if events.active:
        events.emit(events.RECORD, node=node, inputs=inputs, out_shape=target.data.shape)
    # Recorded inside a JVP sweep (forward-over-reverse): the write's tangent, from the values before it.
    tangent = _inplace_tangent(op, attrs, inputs, *run_forward(op, attrs, [t.data for t in inputs])) if dual.active else None
    _save(node, inputs, None, None, before_write=True)
    _write(op, attrs, target, inputs)
    views.rebase(target if base is None else base, node)
    if base is not None:
        target.grad_fn                                    # regenerate the view's own history now, as PyTorch does
    if tangent is not None:
        _set_written_tangent(target, tangent)
    _save(node, inputs, target, None, before_write=False)
    return target


def _write(op, attrs, target, inputs):
    target.data[...] = run_forward(op, attrs, [t.data for t in inputs])[0]
    target.storage.version += 1
    if events.active:
        events.emit(events.INPLACE, tensor=target, version=target.storage.version)


def _dual_output(op, attrs, inputs, arrays, out, extras):
    """Forward mode: the output, carrying the tangent its op's jvp computes; nothing recorded, nothing saved."""
    if events.active:
        events.emit(events.OP, op=op, attrs=attrs)
    output = _output(op, attrs, out, inputs, None)
    _carry_tangent(op, attrs, inputs, arrays, out, extras, output)
    if events.active:
        events.emit(events.TANGENT, op=op, attrs=attrs, inputs=inputs, output=output)   # the op ran, its tangent is set
    return output


def _carry_tangent(op, attrs, inputs, arrays, out, extras, output):
    if type(output) is View:
        return                              # a view's tangent is its base's, through the same view ops
    tangents = tuple([dual.tangent_of(t) for t in inputs])
    if _carries(tangents):
        tangent = op.jvp(tangents, _jvp_values(op, arrays, out, extras), attrs)
        dual.set_tangent(output, _fitted(tangent, out))


def _dual_inplace(op, target, others, attrs):
    """Forward mode, in place: the write lands in the target's value and the jvp's result in its tangent."""
    inputs = [target, *others]
    out, extras = run_forward(op, attrs, [t.data for t in inputs])
    tangent = _inplace_tangent(op, attrs, inputs, out, extras)       # reads the values before the write
    target.data[...] = out
    target.storage.version += 1
    if events.active:
        events.emit(events.INPLACE, tensor=target, version=target.storage.version)
    if tangent is not None:
        _set_written_tangent(target, tangent)
    if events.active:
        events.emit(events.TANGENT, op=op, attrs=attrs, inputs=inputs, output=target)
    return target


def _inplace_tangent(op, attrs, inputs, out, extras):
    """The tangent an in-place write gives its target (None when no input carries one), read before the write."""
    tangents = tuple([dual.tangent_of(t) for t in inputs])
    if not _carries(tangents):
        return None
    return _fitted(op.jvp(tangents, _jvp_values(op, [t.data for t in inputs], out, extras), attrs), out)


def _set_written_tangent(target, tangent):
    """The written target's tangent; for a view, its region of the base's tangent, so every view of that base
    sees it."""
    if type(target) is not View:
        dual.set_tangent(target, tangent)
        return
    base = target.base
    base_tangent = dual.tangent_of(base)
    base_tangent = np.zeros_like(base.data) if base_tangent is None else np.array(base_tangent, copy=True)
    # put() writes by flat C-order position whatever the layout (a reshape of an F-ordered copy is a copy)
    np.put(base_tangent, views.ViewOf(base.data.shape, target.chain).index(), tangent)
    dual.set_tangent(base, base_tangent)


def _carries(tangents):
    for tangent in tangents:
        if tangent is not None:
            return True
    return False


def _jvp_values(op, arrays, out, extras):
    """What a jvp may read: every input by name, "out" and the extras, all from this forward."""
    values = {op.inputs[0]: tuple(arrays)} if op.variadic else dict(zip(op.inputs, arrays))
    values["out"] = out
    if extras:
        values.update(extras)
    return values


def _fitted(tangent, out):
    """A jvp's result as the output's tangent: the output's shape (a broadcast term spread) and dtype."""
    tangent = np.asarray(tangent)
    if tangent.shape != out.shape:
        tangent = np.array(np.broadcast_to(tangent, out.shape))
    return tangent.astype(out.dtype, copy=False)


def _output(op, attrs, out, inputs, node):
    requires_grad = node is not None
    if op.view and np.may_share_memory(out, inputs[0].data):
        return View.of(out, inputs[0], op, attrs, requires_grad, node)
    kind = "activation" if op.output_kind is None else op.output_kind(inputs)
    return Tensor.allocate(out, kind, requires_grad, node)


def _save(node, inputs, output, extras, before_write=None):
    """Pin each declared saved value whose consumers' gradients are needed."""
    needs = node.needs
    for saved_name, (source, where), needed_by in plan_of(node.op):
        if needed_by and not _any_needed(needs, needed_by):
            continue
        if source == "input":
            if before_write is False:
                continue
            tensor = inputs[where]
            if before_write and where == 0:
                _save_original(node, saved_name, tensor)
                continue
            if tensor.recipe is not None:
                node.save_recipe(saved_name, tensor.recipe, tensor.uid)
                continue
            producer = tensor.grad_fn
            origin = producer.name() if producer is not None else None
            if producer is None and tensor.requires_grad:
                producer = tensor
            node.save(saved_name, tensor.data, tensor.storage, tensor.uid, origin, producer,
                      dual.tangent_of(tensor) if dual.active else None)
        elif source == "out":
            if output is None:
                continue
            if output.recipe is not None:
                node.save_recipe(saved_name, output.recipe, output.uid)
                continue
            node.save(saved_name, output.data, output.storage, output.uid, node.name(), OWN_OUTPUT,
                      dual.tangent_of(output) if dual.active else None)
        elif before_write is None:
            _save_extra(node, saved_name, extras[saved_name])


def _any_needed(needs, indices):
    for i in indices:
        if needs[i]:
            return True
    return False


def _save_original(node, saved_name, target):
    """An in-place op's target as it was before the write: a clone, as PyTorch saves `original_self`, whose
    history is the target's before the write (read before the rebase)."""
    tangent = dual.tangent_of(target) if dual.active else None
    _save_extra(node, saved_name, target.data.copy(), views.edge_to(target), tangent)


def _save_extra(node, saved_name, array, producer=None, tangent=None):
    """An extra the forward computed only for backward (a dropout mask, normalization statistics)."""
    uid = next_uid()
    storage = Storage(array.nbytes, array.dtype, "activation", uid)
    if events.active:
        events.emit(events.ALLOC_EXTRA, uid=uid, storage=storage, array=array, node=node, name=saved_name)
    node.save(saved_name, array, storage, uid, node.name(), producer, tangent)
