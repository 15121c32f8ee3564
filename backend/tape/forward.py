"""Forward mode: `jvp` pushes tangents through one forward sweep; `jacobian` builds J a column or a row at a time.

A JVP sweep runs `fn` once with dual values: each op applied through the dispatcher also computes its output's
tangent from its inputs' (its registry entry's jvp). Nothing is recorded on the tape and nothing is saved for a
backward, so forward mode's memory is the forward's own: each tangent lives exactly as long as its value.
A full Jacobian of f: Rⁿ → Rᵐ takes n JVP sweeps (one column each) or m VJP sweeps (one row each): reverse
mode wins for a scalar loss, forward mode for few inputs and many outputs.
"""
import numpy as np

from backend.tape import dual, grad_mode
from backend.tape.engine import backward
from backend.tape.tensor import Tensor, tensor as make_tensor


def jvp(fn, primals, tangents):
    """(fn(*primals), the directional derivative of fn at primals along tangents), in one forward sweep.

    `primals` and `tangents` are sequences of Tensors or arrays of matching shapes; each tangent is cast to
    its primal's dtype. Returns (outputs, tangent_outputs) in fn's structure: one Tensor, or a tuple of them.
    An output that does not depend on any primal gets a zero tangent. Randomness (dropout) draws from the
    generator as the plain forward would: seed it to compare sweeps.
    """
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"jvp got {len(primals)} primals but {len(tangents)} tangents: give one tangent per primal")
    with dual.sweep(), grad_mode.no_grad():
        duals = []
        for index, (primal, tangent) in enumerate(zip(primals, tangents)):
            primal = primal if isinstance(primal, Tensor) else make_tensor(primal)
            array = np.array(tangent.data if isinstance(tangent, Tensor) else tangent, dtype=primal.dtype)
            if array.shape != primal.shape:
                raise ValueError(f"tangent {index} has shape {array.shape} but its primal has shape {primal.shape}")
            carrier = Tensor.view_of(primal.data, primal, name=primal.name)     # the caller's tensor stays untouched
            dual.set_tangent(carrier, array)
            duals.append(carrier)
        outputs = fn(*duals)
        single = isinstance(outputs, Tensor)
        tangent_outputs = tuple(_tangent_tensor(out) for out in ((outputs,) if single else outputs))
    return outputs, (tangent_outputs[0] if single else tangent_outputs)


def _tangent_tensor(out):
    tangent = dual.tangent_of(out)
    array = np.zeros_like(out.data) if tangent is None else np.array(tangent, copy=True)
    return Tensor.allocate(array, "activation", name="tangent")


def jacobian(fn, x, mode="reverse"):
    """The full Jacobian of fn (one Tensor in, one Tensor out) at x, shaped out.shape + x.shape (a numpy array).

    mode="forward": one JVP sweep per input element (n sweeps, each a column).
    mode="reverse": one forward recorded once, then one VJP sweep per output element (m sweeps, each a row),
    the tape kept between sweeps with retain_graph and freed by the last one.
    """
    x = x if isinstance(x, Tensor) else make_tensor(x)
    if mode == "forward":
        return _forward_jacobian(fn, x)
    if mode == "reverse":
        return _reverse_jacobian(fn, x)
    raise ValueError(f"jacobian mode must be 'forward' or 'reverse', not {mode!r}")


def _forward_jacobian(fn, x):
    columns = []
    basis = np.zeros(x.size, dtype=x.dtype)
    out_shape = None
    for i in range(x.size):
        basis[i] = 1
        out, tangent = jvp(fn, (x,), (basis.reshape(x.shape),))
        basis[i] = 0
        out_shape = out.shape
        columns.append(tangent.data.reshape(-1))
    if out_shape is None:                          # an empty input: no sweeps, the output's shape from one run
        with grad_mode.no_grad():
            out_shape = fn(x).shape
        return np.zeros(out_shape + x.shape, dtype=x.dtype)
    return np.stack(columns, axis=-1).reshape(out_shape + x.shape)


def _reverse_jacobian(fn, x):
    leaf = Tensor.view_of(x.data, x, requires_grad=True, name=x.name)
    with grad_mode.enable_grad():
        out = fn(leaf)
    rows = np.zeros((out.size, x.size), dtype=x.dtype)
    if not out.requires_grad:
        return rows.reshape(out.shape + x.shape)   # out does not depend on x
    seed = np.zeros(out.size, dtype=out.dtype)
    for j in range(out.size):
        seed[j] = 1
        leaf.grad = None
        backward(out, seed.reshape(out.shape), retain_graph=j < out.size - 1)
        seed[j] = 0
        if leaf.grad is not None:
            rows[j] = np.asarray(leaf.grad).reshape(-1)
    return rows.reshape(out.shape + x.shape)
