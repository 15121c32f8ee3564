"""Activation checkpointing: a region whose forward keeps only its inputs and whose backward re-runs it.

`checkpoint(fn, *inputs)` follows torch.utils.checkpoint (non-reentrant semantics): the forward runs `fn`
under no_grad and appends one "checkpoint" entry to the tape that saves only the region's inputs (and the
RNG state and the autocast state). Its vjp re-runs `fn` with recording (the "recompute" phase) under the autocast
state of the original forward, so the recomputed activations have the dtypes and bytes they had; it backs through
the recomputed sub-graph with the engine, hands back the inputs' gradients and lets the recomputed activations go.
"""
from backend.tape import amp, events, grad_mode
from backend.tape import random as tape_random
from backend.tape.engine import backward_many, running_sweep
from backend.tape.node import Node
from backend.tape.registry import Op, register
from backend.tape.tensor import Tensor


def _recompute_vjp(adjoint, saved, node):
    """Re-run the region with recording, back through it from `adjoint`, and hand back each input's gradient.

    The nested sweep seeds from the incoming Adjoint itself and captures the inputs' gradients in buffers, so
    every gradient keeps one storage, as it would have without the checkpoint. It runs inside the outer sweep
    and as it does: a parameter's gradient goes back to it (to .grad, or nowhere under grad()), and under
    create_graph the nested vjps are recorded and the region re-runs on its inputs with their history, so a
    second backward goes through the recomputed region to what came before it (torch's non-reentrant
    checkpoint does the same)."""
    attrs = node.attrs
    if attrs.get("replayed"):        # a later sweep after a create_graph one: the recomputed region is the graph
        return (adjoint,)
    outer = running_sweep()
    on_tape = isinstance(adjoint.array, Tensor)
    if on_tape:
        leaves = [node.saved_as_tensor(f"inputs[{i}]") for i in range(len(node.needs))]
    else:
        leaves = [_leaf_over(node.saved[f"inputs[{i}]"], need) for i, need in enumerate(node.needs)]
    del saved
    if events.active:
        events.emit(events.RECOMPUTE_BEGIN, node=node)
    outer_state = tape_random.get_rng_state()
    if attrs["rng_state"] is not None:
        tape_random.set_rng_state(attrs["rng_state"])      # the dropout masks replay bit for bit
    with grad_mode.enable_grad(), amp.running_as(attrs["autocast"]):     # the state the region was recorded under
        out = attrs["fn"](*leaves)
    if attrs["rng_state"] is not None:
        tape_random.set_rng_state(outer_state)
    if events.active:
        events.emit(events.RECOMPUTE_END, node=node)
    wanted = [leaf for leaf, need in zip(leaves, node.needs) if need]
    captured = iter(backward_many([out], [adjoint], capture=wanted, create_graph=outer.create_graph,
                                  accumulate=outer.accumulate, outer=outer)
                    if out.requires_grad else [None] * len(wanted))
    grads = tuple(next(captured) if need else None for need in node.needs)
    if on_tape and outer.retain_graph and out.grad_fn is not None:
        # The recorded first backward reads the recomputed region's values; a second backward must meet them
        # there, so from now on this entry hands its adjoint to the recomputed region (whose history reaches
        # this entry's inputs): both paths sum at the same nodes, as they do in the plain run and in torch,
        # where the unpacked values keep the original nodes as their history.
        attrs["replayed"], attrs["rebase_to"] = True, out
    del out
    return grads


def _leaf_over(saved_entry, requires_grad):
    """A fresh leaf over a saved input's storage: the recomputed sub-graph ends here, so its grad is ours."""
    array, storage = saved_entry[0], saved_entry[1]
    return Tensor.view_of(array, _Held(storage), requires_grad=requires_grad)


class _Held:
    """The one attribute Tensor.view_of reads from its base."""
    __slots__ = ("storage",)

    def __init__(self, storage):
        self.storage = storage


def _region_jvp(t, v, attrs):
    raise RuntimeError("checkpoint is never dispatched: under forward mode checkpoint() runs its region, "
                       "whose own ops carry the tangents")


CHECKPOINT = register(Op(
    "checkpoint", "checkpoint", ("inputs",), saves={"inputs": ()}, variadic=True,
    forward=lambda attrs, *arrays: None,      # never dispatched: checkpoint() runs the region itself
    vjp=_recompute_vjp, jvp=_region_jvp, takes_adjoint=True,
    flops=lambda shapes, out_shape, attrs: 0,  # the region's FLOPs are counted on its recompute entries
    why="checkpoint saves only the region's inputs: its backward re-runs the region to get the rest back.",
))


def checkpoint(fn, *inputs, preserve_rng_state=True):
    """Run `fn(*inputs)` keeping only `inputs` for backward; returns fn's output (one Tensor)."""
    if not grad_mode.enabled:
        return fn(*inputs)
    needs = tuple(t.requires_grad for t in inputs)
    state = tape_random.get_rng_state() if preserve_rng_state else None
    node = Node(CHECKPOINT, {"fn": fn, "rng_state": state, "preserve_rng_state": preserve_rng_state,
                             "autocast": amp.state()}, inputs, needs)
    if events.active:
        events.emit(events.RECORD, node=node, inputs=inputs, out_shape=())
    for i, t in enumerate(inputs):
        origin = t.grad_fn.name() if t.grad_fn is not None else None
        producer = t.grad_fn if t.grad_fn is not None else (t if t.requires_grad else None)
        node.save(f"inputs[{i}]", t.data, t.storage, t.uid, origin, producer)    # its history: for create_graph
    if events.active:
        events.emit(events.CHECKPOINT_BEGIN, node=node)
    with grad_mode.no_grad(), grad_mode.watching_for_grad() as touched_grad:
        out = fn(*inputs)
    if events.active:
        events.emit(events.CHECKPOINT_END, node=node)
    if not touched_grad[0]:
        return out          # nothing in the region requires grad: no entry, and the output does not either
    output = Tensor.view_of(out.data, out, requires_grad=True, grad_fn=node)
    node.output_uid = output.uid
    return output
