"""torch.autograd.grad on the tape, and Hessian-vector products built from it (reverse-over-reverse and
forward-over-reverse).

`grad` runs one adjoint sweep that touches no `.grad`: the inputs' gradients are captured in the sweep's
buffers (keyed by the uid their gradient arrives at) and only the entries on a path to an input run. With
create_graph=True the vjps' own ops are recorded, so the gradients it returns can be differentiated again.
"""
import numpy as np

from backend.tape import grad_mode
from backend.tape.engine import backward_many
from backend.tape.forward import jvp
from backend.tape.tensor import Tensor, tensor as make_tensor

UNUSED = ("One of the differentiated Tensors appears to not have been used in the graph. "
          "Set allow_unused=True if this is the desired behavior.")
NO_GRAD = "One of the differentiated Tensors does not require grad"


def grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None, allow_unused=False):
    """The gradients of `outputs` (weighted by `grad_outputs`) with respect to each of `inputs`, as Tensors.

    As torch.autograd.grad: one Tensor or a sequence for outputs and inputs (a tuple comes back either way);
    grad_outputs default to ones for scalar outputs; retain_graph defaults to create_graph; an input the
    outputs do not depend on raises unless allow_unused=True (then its gradient is None).
    """
    outputs = _as_sequence(outputs)
    inputs = _as_sequence(inputs)
    grad_outputs = [None] * len(outputs) if grad_outputs is None else _as_sequence(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(grad_outputs)} for {len(outputs)}")
    for tensor in inputs:
        if not tensor.requires_grad:
            raise RuntimeError(NO_GRAD)
    captured = backward_many(outputs, grad_outputs, retain_graph, capture=inputs, create_graph=create_graph,
                             accumulate=False)
    gradients = []
    for adjoint in captured:
        if adjoint is None:
            if not allow_unused:
                raise RuntimeError(UNUSED)
            gradients.append(None)
        else:
            gradients.append(_as_tensor(adjoint.array))
    return tuple(gradients)


def _as_sequence(value):
    return [value] if isinstance(value, Tensor) or value is None else list(value)


def _as_tensor(array):
    """A captured gradient: already a Tensor under create_graph, a fresh one over the plain sweep's array."""
    if isinstance(array, Tensor):
        return array
    return Tensor.allocate(np.array(array), "grad")


def hvp(fn, x, v, mode="reverse-over-reverse"):
    """The Hessian of the scalar fn at x times v, as an ndarray of x's shape.

    mode="reverse-over-reverse": grad with create_graph, then a second sweep seeded with v through the
    recorded first one. mode="forward-over-reverse": one JVP sweep (tangent v) through fn and its
    gradient: the plain vjps run on Tensors that carry tangents, so the gradient's tangent is H·v.
    """
    x = x if isinstance(x, Tensor) else make_tensor(x)
    v = np.asarray(v.data if isinstance(v, Tensor) else v, dtype=x.dtype)
    if mode == "reverse-over-reverse":
        leaf = Tensor.view_of(x.data, x, requires_grad=True, name=x.name)
        with grad_mode.enable_grad():
            out = fn(leaf)
            if not out.requires_grad:           # fn ignores x: no gradient, no curvature
                return np.zeros_like(x.data)
            (first,) = grad(out, leaf, create_graph=True, allow_unused=True)
            if first is None or not first.requires_grad:
                return np.zeros_like(x.data)    # a gradient constant in x (linear, relu-gated): H = 0, as in torch
            (second,) = grad(first, leaf, grad_outputs=make_tensor(v), allow_unused=True)
        return np.zeros_like(x.data) if second is None else np.array(second.data)
    if mode == "forward-over-reverse":
        _, tangent = jvp(lambda carrier: _gradient_of(fn, carrier), (x,), (v,))
        return np.array(tangent.data)
    raise ValueError(f"hvp mode must be 'reverse-over-reverse' or 'forward-over-reverse', not {mode!r}")


def _gradient_of(fn, carrier):
    carrier.requires_grad = True            # the JVP sweep's carrier becomes a leaf the forward is recorded from
    with grad_mode.enable_grad():
        out = fn(carrier)
        (gradient,) = grad(out, carrier, allow_unused=True) if out.requires_grad else (None,)
    return gradient if gradient is not None else Tensor.allocate(np.zeros_like(carrier.data), "grad")
