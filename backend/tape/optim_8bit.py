"""Adam with 8-bit state: m and v kept as int8, one float32 scale (absmax/127) per 2,048-element block.

Each step dequantizes a parameter's moments to float32, runs Adam's update on them (the update reads the fresh
float32 moments), and requantizes them for storage, as bitsandbytes' block-wise 8-bit Adam does (with its
linear rather than dynamic code book). State is 2 B per parameter plus 8 B per block (two scales): resident
16 → 10 B/param against fp32 Adam. The moments are rounded, so the updates are close to Adam's, not equal.
"""
import numpy as np

from backend.tape.optim import Adam, _plus_scaled
from backend.tape.tensor import Tensor

BLOCK = 2048
LEVELS = 127


def quantize(values, codes, scales):
    """Write `values` (float32, flat) into int8 `codes` with one absmax/127 scale per block into `scales`."""
    n = values.size
    padded = np.zeros(len(scales) * BLOCK, dtype=np.float32)
    padded[:n] = values
    blocks = padded.reshape(len(scales), BLOCK)
    absmax = np.abs(blocks).max(axis=1)
    scales[...] = absmax / LEVELS
    safe = np.where(scales > 0, scales, 1).astype(np.float32)
    codes[...] = np.clip(np.rint(blocks / safe[:, None]), -LEVELS, LEVELS).reshape(-1)[:n].astype(np.int8)


def dequantize(codes, scales):
    """The float32 values of int8 `codes` under their blocks' scales."""
    n = codes.size
    padded = np.zeros(len(scales) * BLOCK, dtype=np.float32)
    padded[:n] = codes
    return (padded.reshape(len(scales), BLOCK) * scales[:, None]).reshape(-1)[:n]


def blocks_of(size):
    return -(-size // BLOCK)


class Adam8bit(Adam):
    """torch.optim.Adam's update (L2 weight decay coupled into g) over int8 block-quantized m and v."""

    def update(self, index, p):
        beta1, beta2 = self.betas
        g = p.grad.astype(np.float32).reshape(-1)
        if self.weight_decay != 0:
            g = _plus_scaled(g, self.weight_decay, p.data.reshape(-1).astype(np.float32))
        if index not in self.state:
            self.state[index] = self._fresh_state(p)
        state = self.state[index]
        state["step"] += 1
        m = dequantize(state["m"].data, state["m_scale"].data)
        v = dequantize(state["v"].data, state["v_scale"].data)
        m += (1 - beta1) * (g - m)
        v *= beta2
        v += (1 - beta2) * g * g
        step_size = self.lr / (1 - beta1 ** state["step"])
        denom = np.sqrt(v) / (1 - beta2 ** state["step"]) ** 0.5 + self.eps
        p.data -= (step_size * m / denom).reshape(p.data.shape).astype(p.data.dtype)
        quantize(m, state["m"].data, state["m_scale"].data)
        quantize(v, state["v"].data, state["v_scale"].data)

    @staticmethod
    def _fresh_state(p):
        name = p.name or "param"
        blocks = blocks_of(p.data.size)

        def codes(suffix):
            return Tensor.allocate(np.zeros(p.data.size, dtype=np.int8), "optimizer", name=f"{name}.{suffix}")

        def scales(suffix):
            return Tensor.allocate(np.zeros(blocks, dtype=np.float32), "optimizer", name=f"{name}.{suffix}")

        return {"step": 0, "m": codes("m_int8"), "v": codes("v_int8"),
                "m_scale": scales("m_scale"), "v_scale": scales("v_scale")}


def state_bytes(param_sizes):
    """The formula: 2 B per element (int8 m and v) plus two float32 scales per 2,048-element block, per tensor."""
    return sum(2 * n + 2 * 4 * blocks_of(n) for n in param_sizes)
