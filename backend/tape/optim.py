"""Optimizers whose state is real tensors, so Adam's m and v are counted as optimizer memory."""
import numpy as np

from backend.tape import events
from backend.tape.modes import no_grad
from backend.tape.tensor import Tensor


class Optimizer:
    def __init__(self, params, lr):
        self.params = list(params)
        self.lr = lr

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
                    continue                     # never reached by backward: nothing to apply
                if events.active:
                    events.emit("optimizer_step", param=p, index=index)
                self.update(index, p)
                p.storage.version += 1

    def update(self, index, p):
        raise NotImplementedError


class SGD(Optimizer):
    """p ← p − lr·g; no state."""

    def update(self, index, p):
        p.data -= self.lr * p.grad


class Adam(Optimizer):
    """Adam with bias correction; m and v are allocated lazily on a parameter's first step."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        super().__init__(params, lr)
        self.betas, self.eps = betas, eps
        self.state = {}

    def update(self, index, p):
        beta1, beta2 = self.betas
        if index not in self.state:
            self.state[index] = {
                "step": 0,
                "m": Tensor.allocate(np.zeros_like(p.data), "optimizer", name=f"{p.name or 'param'}.m"),
                "v": Tensor.allocate(np.zeros_like(p.data), "optimizer", name=f"{p.name or 'param'}.v"),
            }
        state = self.state[index]
        state["step"] += 1
        m, v, g = state["m"].data, state["v"].data, p.grad
        m *= beta1
        m += (1 - beta1) * g
        v *= beta2
        v += (1 - beta2) * g * g
        m_hat = m / (1 - beta1 ** state["step"])
        v_hat = v / (1 - beta2 ** state["step"])
        p.data -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)
