"""Benchmark: our engine (no listener) against hand-written numpy forward+backward of the same MLP.

Prints, in one run, the time ratio engine / hand numpy at widths 64, 256 and 1024 (batch 64, input 64,
two hidden layers, output 1, float32), the per-op recording overhead in µs, and one JVP sweep (forward mode:
a directional derivative along the first layer's weight) against one VJP sweep (forward + backward) of the
same MLP; whole Jacobians with respect to the input (batch 4: n = 256 input elements) by n JVP sweeps
against m VJP sweeps, for the logits (m = 4) and the scalar loss (m = 1); and a create_graph backward (and an
HVP: a second backward through it) against a plain backward. Run: python bench/engine.py

`--cpu` times with this thread's CPU clock and 40 rounds instead of the wall clock and 7: on a shared, busy
machine the wall clock measures the neighbours (run it with OPENBLAS_NUM_THREADS=1 so BLAS stays on this thread).
"""
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backend.tape import grad, jacobian, jvp, no_grad, parameter, tensor  # noqa: E402


def make_weights(width, rng):
    shapes = [(64, width), (width,), (width, width), (width,), (width, 1), (1,)]
    return [rng.standard_normal(s).astype(np.float32) * 0.1 for s in shapes]


def hand_numpy(x, y, weights):
    w1, b1, w2, b2, w3, b3 = weights
    h1 = x @ w1 + b1
    a1 = np.maximum(h1, 0)
    h2 = a1 @ w2 + b2
    a2 = np.maximum(h2, 0)
    out = a2 @ w3 + b3
    diff = out - y
    loss = np.mean(diff * diff)
    d_out = diff * (2.0 / diff.size)
    g_w3, g_b3 = a2.T @ d_out, d_out.sum(0)
    d_a2 = d_out @ w3.T
    d_h2 = d_a2 * (a2 > 0)
    g_w2, g_b2 = a1.T @ d_h2, d_h2.sum(0)
    d_a1 = d_h2 @ w2.T
    d_h1 = d_a1 * (a1 > 0)
    g_w1, g_b1 = x.T @ d_h1, d_h1.sum(0)
    return loss, (g_w1, g_b1, g_w2, g_b2, g_w3, g_b3)


def engine(x, y, params):
    w1, b1, w2, b2, w3, b3 = params
    for p in params:
        p.grad = None
    out = ((x @ w1 + b1).relu() @ w2 + b2).relu() @ w3 + b3
    diff = out - y
    loss = (diff * diff).mean()
    loss.backward()
    return loss


def torch_eager(width, weights, x_array, y_array):
    """The same MLP in PyTorch eager, when torch is installed (never a dependency of the app)."""
    try:
        import torch
    except ImportError:
        return None
    params = [torch.tensor(w, requires_grad=True) for w in weights]
    x, y = torch.tensor(x_array), torch.tensor(y_array)

    def step():
        for p in params:
            p.grad = None
        w1, b1, w2, b2, w3, b3 = params
        out = ((x @ w1 + b1).relu() @ w2 + b2).relu() @ w3 + b3
        ((out - y) ** 2).mean().backward()
    return step


CPU_CLOCK = "--cpu" in sys.argv[1:]
CLOCK = time.thread_time if CPU_CLOCK else time.perf_counter
ROUNDS = 40 if CPU_CLOCK else 7


def best_of(fn, repeats, rounds=ROUNDS):
    times = []
    for _ in range(rounds):
        start = CLOCK()
        for _ in range(repeats):
            fn()
        times.append((CLOCK() - start) / repeats)
    return min(times)


def jvp_against_vjp(rng, width=256):
    """One JVP sweep (tangent along W1) vs one VJP sweep (all gradients) of the MLP at one width."""
    weights = make_weights(width, rng)
    params = [parameter(w) for w in weights]
    x = tensor(rng.standard_normal((64, 64)).astype(np.float32))
    y = tensor(rng.standard_normal((64, 1)).astype(np.float32))
    direction = rng.standard_normal(weights[0].shape).astype(np.float32)

    def loss_of(w1):
        _, b1, w2, b2, w3, b3 = params
        diff = ((x @ w1 + b1).relu() @ w2 + b2).relu() @ w3 + b3 - y
        return (diff * diff).mean()

    sweep_jvp = best_of(lambda: jvp(loss_of, (params[0],), (direction,)), 50)
    sweep_vjp = best_of(lambda: engine(x, y, params), 50)
    print(f"width {width}: one JVP sweep {sweep_jvp * 1e6:.1f} µs, one VJP sweep (forward + backward) "
          f"{sweep_vjp * 1e6:.1f} µs, ratio {sweep_jvp / sweep_vjp:.2f}x")


def whole_jacobians(rng, width=64, batch=4):
    """Full Jacobians with respect to x: n JVP sweeps (a column each) against m VJP sweeps (a row each)."""
    w1, b1, w2, b2, w3, b3 = [tensor(w) for w in make_weights(width, rng)]     # constants: differentiate x only
    x = tensor(rng.standard_normal((batch, 64)).astype(np.float32))
    y = tensor(rng.standard_normal((batch, 1)).astype(np.float32))

    def logits(x):
        return ((x @ w1 + b1).relu() @ w2 + b2).relu() @ w3 + b3

    def loss(x):
        diff = logits(x) - y
        return (diff * diff).mean()

    n = x.size
    for name, fn, m in (("logits", logits, batch), ("loss", loss, 1)):
        np.testing.assert_allclose(jacobian(fn, x, mode="forward"), jacobian(fn, x, mode="reverse"), rtol=1e-4, atol=1e-6)
        forward = best_of(lambda: jacobian(fn, x, mode="forward"), 1, rounds=min(ROUNDS, 7))
        reverse = best_of(lambda: jacobian(fn, x, mode="reverse"), 1, rounds=min(ROUNDS, 7))
        print(f"Jacobian of the {name} [{m} x {n}]: {n} JVP sweeps {forward * 1e3:.2f} ms, {m} VJP sweep{'s' if m > 1 else ''} "
              f"{reverse * 1e3:.2f} ms, forward / reverse {forward / reverse:.1f}x")


def double_backward_against_backward(rng, width=256):
    """A create_graph backward (the vjps recorded) and the HVP it makes possible, vs one plain backward, on the MLP."""
    weights = make_weights(width, rng)
    params = [parameter(w) for w in weights]
    x = tensor(rng.standard_normal((64, 64)).astype(np.float32))
    y = tensor(rng.standard_normal((64, 1)).astype(np.float32))

    def loss():
        w1, b1, w2, b2, w3, b3 = params
        diff = ((x @ w1 + b1).tanh() @ w2 + b2).tanh() @ w3 + b3 - y
        return (diff * diff).mean()

    def recorded():
        grad(loss(), params, create_graph=True)

    def hessian_vector():
        gradients = grad(loss(), params, create_graph=True)
        grad(gradients, params, grad_outputs=[tensor(np.ones_like(p.data)) for p in params])

    plain = best_of(lambda: grad(loss(), params), 20)
    create_graph = best_of(recorded, 20)
    hvp_time = best_of(hessian_vector, 20)
    print(f"width {width}, tanh: forward + backward {plain * 1e6:.1f} µs; with create_graph {create_graph * 1e6:.1f} µs "
          f"({create_graph / plain:.2f}x); + a second backward (an HVP) {hvp_time * 1e6:.1f} µs ({hvp_time / plain:.2f}x)")


def main():
    rng = np.random.default_rng(0)
    clock = "this thread's CPU time" if CPU_CLOCK else "wall time"
    print(f"MLP batch 64, input 64, two hidden layers of width w, output 1, float32; best of {ROUNDS} rounds, {clock}")
    print(f"{'width':>6} {'hand numpy µs':>14} {'engine µs':>10} {'ratio':>6} {'torch µs':>9} {'torch ratio':>11}")
    for width in (64, 256, 1024):
        weights = make_weights(width, rng)
        x_array = rng.standard_normal((64, 64)).astype(np.float32)
        y_array = rng.standard_normal((64, 1)).astype(np.float32)
        params = [parameter(w) for w in weights]
        x, y = tensor(x_array), tensor(y_array)
        engine(x, y, params)
        np.testing.assert_allclose(params[0].grad, hand_numpy(x_array, y_array, weights)[1][0], rtol=1e-3, atol=1e-6)
        repeats = {64: 400, 256: 100, 1024: 10}[width]
        hand = best_of(lambda: hand_numpy(x_array, y_array, weights), repeats)
        ours = best_of(lambda: engine(x, y, params), repeats)
        torch_step = torch_eager(width, weights, x_array, y_array)
        theirs = best_of(torch_step, repeats) if torch_step else None
        torch_cells = f"{theirs * 1e6:>9.1f} {theirs / hand:>10.2f}x" if theirs else f"{'-':>9} {'(no torch)':>11}"
        print(f"{width:>6} {hand * 1e6:>14.1f} {ours * 1e6:>10.1f} {ours / hand:>5.2f}x {torch_cells}")

    # Recording overhead: a chain of tiny ops, recorded vs the same ops under no_grad.
    w = parameter(np.ones(4, dtype=np.float32))

    def chain():
        h = w
        for _ in range(1000):
            h = h * 1.0
        return h

    def chain_unrecorded():
        with no_grad():
            chain()

    recorded = best_of(chain, 5)
    plain = best_of(chain_unrecorded, 5)
    print(f"recording overhead: {(recorded - plain) / 1000 * 1e6:.2f} µs/op "
          f"(recorded {recorded / 1000 * 1e6:.2f} µs/op, unrecorded {plain / 1000 * 1e6:.2f} µs/op)")
    jvp_against_vjp(rng)
    whole_jacobians(rng)
    double_backward_against_backward(rng)


if __name__ == "__main__":
    main()
