"""Applying an op: run its forward, and when an input requires grad, append a tape entry and save what its vjp needs."""
import numpy as np

from backend.tape import events, modes, remat
from backend.tape.node import Node
from backend.tape.registry import plan_of
from backend.tape.storage import Storage, next_uid
from backend.tape.tensor import Tensor

NO_ATTRS = {}


def apply(op, inputs, attrs=NO_ATTRS):
    """Run `op` on `inputs` (Tensors); record it on the tape if any input requires grad and grad mode is on."""
    arrays = [t.data for t in inputs]
    result = op.forward(attrs, *arrays)
    out, extras = result if op.extras else (result, None)
    if modes.enabled:
        needs = tuple([t.requires_grad for t in inputs])
        recording = True in needs
    else:
        recording = False
    if not recording:
        if events.active:
            events.emit("op", op=op)       # an unrecorded op: a step only inside a checkpoint's forward
        return _output(op, out, inputs, None)
    node = Node(op, attrs, inputs, needs)
    if events.active:
        events.emit("record", node=node, inputs=inputs, out_shape=out.shape)
    output = _output(op, out, inputs, node)
    node.output_uid = output.uid
    if remat.enabled:
        remat.on_record(node, inputs, output)       # before saving: an op saving its own output keeps a recipe
    _save(node, inputs, output, extras)
    return output


def apply_inplace(op, target, others, attrs=NO_ATTRS):
    """Run `op` writing into `target`'s storage; bump its version and, if recording, rebase its history."""
    inputs = [target, *others]
    recording = modes.enabled and any(t.requires_grad for t in inputs)
    if recording and target.requires_grad and target.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    node = None
    if recording:
        node = Node(op, attrs, inputs, tuple(t.requires_grad for t in inputs))
        if events.active:
            events.emit("record", node=node, inputs=inputs, out_shape=target.data.shape)
        _save(node, inputs, None, None, before_write=True)
    target.data[...] = op.forward(attrs, *[t.data for t in inputs])
    target.storage.version += 1
    if events.active:
        events.emit("inplace", tensor=target, version=target.storage.version)
    if recording:
        target.grad_fn, target.requires_grad = node, True
        node.output_uid = target.uid
        _save(node, inputs, target, None, before_write=False)
    return target


def _output(op, out, inputs, node):
    requires_grad = node is not None
    if op.view and np.may_share_memory(out, inputs[0].data):
        return Tensor.view_of(out, inputs[0], requires_grad, node)
    return Tensor.allocate(out, "activation", requires_grad, node)


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
            if tensor.recipe is not None:
                node.save_recipe(saved_name, tensor.recipe, tensor.uid)
                continue
            origin = tensor.grad_fn.name() if tensor.grad_fn is not None else None
            node.save(saved_name, tensor.data, tensor.storage, tensor.uid, origin)
        elif source == "out":
            if output is None:
                continue
            if output.recipe is not None:
                node.save_recipe(saved_name, output.recipe, output.uid)
                continue
            node.save(saved_name, output.data, output.storage, output.uid, node.name())
        elif before_write is None:
            _save_extra(node, saved_name, extras[saved_name])


def _any_needed(needs, indices):
    for i in indices:
        if needs[i]:
            return True
    return False


def _save_extra(node, saved_name, array):
    """An extra the forward computed only for backward (a dropout mask, normalization statistics)."""
    uid = next_uid()
    storage = Storage(array.nbytes, array.dtype, "activation", uid)
    if events.active:
        events.emit("alloc_extra", uid=uid, storage=storage, array=array, node=node, name=saved_name)
    node.save(saved_name, array, storage, uid, node.name())
