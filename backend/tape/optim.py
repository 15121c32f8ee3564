"""Optimizers as torch.optim defines them, whose state is real tensors counted as optimizer memory.

SGD's momentum buffer and Adam's two moments are allocated on a parameter's first step (as torch does), each
with Tensor.allocate(..., "optimizer"), so the trace's memory timeline shows them. The arithmetic follows
torch's single-tensor CPU kernels operation by operation, so float64 runs agree with torch.optim to rounding.
"""
import math

import numpy as np

from backend.tape import events
from backend.tape.grad_mode import no_grad
from backend.tape.tensor import Tensor


def _check_range(what, value, low=0.0, high=math.inf):
    """torch.optim's argument checks, with its messages."""
    if not low <= value < high:
        raise ValueError(f"Invalid {what}: {value}")


class Optimizer:
    def __init__(self, params, lr):
        _check_range("learning rate", lr)
        self.params = list(params)
        self.lr = lr
        self.state = {}                          # param index -> its buffers (and Adam's step count)

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad[...] = 0

    def step(self):
        with no_grad():
            for index, p in enumerate(self.params):
                if p.grad is None:
                    continue                     # never reached by backward: nothing to apply (nor decay)
                if events.active:
                    events.emit(events.OPTIMIZER_STEP, param=p, index=index)
                self.update(index, p)
                p.storage.version += 1

    def update(self, index, p):
        raise NotImplementedError

    @staticmethod
    def buffer(p, suffix, values=None):
        """A state tensor for `p`: a fresh optimizer-kind allocation holding a copy of `values` (zeros if None)."""
        data = np.zeros_like(p.data) if values is None else np.array(values, dtype=p.data.dtype)
        return Tensor.allocate(data, "optimizer", name=f"{p.name or 'param'}.{suffix}")


class SGD(Optimizer):
    """torch.optim.SGD. d = g + weight_decay·p; with momentum μ, buf ← μ·buf + (1 − dampening)·d (buf = d on the
    first step) and d = buf (nesterov: d + μ·buf); then p ← p − lr·d. Momentum is one buffer per parameter."""

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
        super().__init__(params, lr)
        _check_range("momentum value", momentum)
        _check_range("weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        self.momentum, self.dampening, self.weight_decay, self.nesterov = momentum, dampening, weight_decay, nesterov

    def update(self, index, p):
        d = p.grad
        if self.weight_decay != 0:
            d = _plus_scaled(d, self.weight_decay, p.data)
        if self.momentum != 0:
            state = self.state.get(index)
            if state is None:
                state = self.state[index] = {"momentum_buffer": self.buffer(p, "momentum", d)}
            else:
                buf = state["momentum_buffer"].data
                buf *= self.momentum
                buf += (1 - self.dampening) * d
            buf = state["momentum_buffer"].data
            d = d + self.momentum * buf if self.nesterov else buf
        p.data -= self.lr * d


class Adam(Optimizer):
    """torch.optim.Adam: m and v (exp_avg, exp_avg_sq) with bias correction. weight_decay is L2, coupled into the
    gradient (g + wd·p) before the moments; AdamW below decouples it."""

    decoupled_weight_decay = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, lr)
        _check_range("epsilon value", eps)
        _check_range("beta parameter at index 0", betas[0], high=1.0)
        _check_range("beta parameter at index 1", betas[1], high=1.0)
        _check_range("weight_decay value", weight_decay)
        self.betas, self.eps, self.weight_decay = tuple(betas), eps, weight_decay

    def update(self, index, p):
        beta1, beta2 = self.betas
        g = p.grad
        if self.weight_decay != 0:
            if self.decoupled_weight_decay:
                p.data *= 1 - self.lr * self.weight_decay
            else:
                g = _plus_scaled(g, self.weight_decay, p.data)
        if index not in self.state:
            self.state[index] = {"step": 0, "m": self.buffer(p, "m"), "v": self.buffer(p, "v")}
        state = self.state[index]
        state["step"] += 1
        m, v = state["m"].data, state["v"].data
        _lerp_(m, g, 1 - beta1)
        v *= beta2
        squared = (1 - beta2) * g              # torch's addcmul order, (value·g)·g, with one temporary
        squared *= g
        v += squared
        del squared, g                         # g may be the decayed copy: free it before the update's temporaries
        step_size = self.lr / (1 - beta1 ** state["step"])
        denom = np.sqrt(v)
        denom /= (1 - beta2 ** state["step"]) ** 0.5
        denom += self.eps
        change = -step_size * m
        change /= denom
        p.data += change


class AdamW(Adam):
    """torch.optim.AdamW: Adam with decoupled weight decay, p ← p·(1 − lr·wd) before the Adam update."""

    decoupled_weight_decay = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, lr, betas, eps, weight_decay)


def _plus_scaled(g, scale, p):
    """g + scale·p in a new array, with one temporary the size of p (torch's grad.add(param, alpha=scale))."""
    out = scale * p
    out += g
    return out


def _lerp_(start, end, weight):
    """start ← start + weight·(end − start), in place, in the two forms torch's CPU lerp picks by weight."""
    if weight < 0.5:
        step = end - start
        step *= weight
        start += step
    else:
        step = end - start
        step *= 1 - weight
        np.subtract(end, step, out=start)
