"""How far 8-bit Adam drifts from fp32 Adam on a preset's parameters, fed the same random gradients.

Both optimizers start from the preset's own weights; each step every parameter gets the gradient σ·(d + z), with
d a random direction fixed per tensor (a loss has one), z fresh N(0, 1) noise each step and σ drawn per tensor over
four decades (so the state mixes large and tiny second moments, the regime a linear 8-bit code broke). Pure noise
would make a tensor's net displacement a random walk's, near zero for a one-element bias, and any relative measure
of it meaningless. Reported: the largest |update| / lr any element took, and, per parameter tensor, the
relative L2 distance between the two displacements from the start, ‖Δ8bit − Δfp32‖ / ‖Δfp32‖ (the worst tensor).
Used by tests/tape/test_optim_8bit.py (the bound) and bench/training_knobs.py (the figures).
"""
import numpy as np

import backend.tape as T
from backend.models import presets, validate_spec
from backend.models.model import Model

LR = 1e-3


def _parameters(preset):
    return [p for p in Model(validate_spec(presets.get(preset))).params.values() if p.requires_grad]


def adam8bit_against_adam(preset: str, steps: int = 100, seed: int = 0) -> tuple[float, float]:
    """(worst relative displacement distance, largest update ÷ lr) over `steps` steps."""
    exact, quantized = _parameters(preset), _parameters(preset)
    starts = [p.data.astype(np.float64) for p in exact]
    adam, adam8 = T.Adam(exact, lr=LR), T.Adam8bit(quantized, lr=LR)
    rng = np.random.default_rng(seed)
    sigmas = [10.0 ** rng.uniform(-4, 0) for _ in exact]
    directions = [rng.normal(0, 1, p.data.shape) for p in exact]
    largest = 0.0
    for _ in range(steps):
        for a, b, sigma, direction in zip(exact, quantized, sigmas, directions):
            g = (sigma * (direction + rng.normal(0, 1, a.data.shape))).astype(a.data.dtype)
            a.grad, b.grad = g, g.copy()
        before = [b.data.copy() for b in quantized]
        adam.step()
        adam8.step()
        largest = max(largest, max(float(np.abs(b.data - was).max()) / LR for b, was in zip(quantized, before)))
    farthest = 0.0
    for a, b, start in zip(exact, quantized, starts):
        moved = a.data - start
        farthest = max(farthest, float(np.linalg.norm(b.data - a.data) / max(np.linalg.norm(moved), 1e-30)))
    return farthest, largest
