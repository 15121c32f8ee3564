"""Adam with 8-bit state: m and v kept as one byte per element on bitsandbytes' dynamic code, one float32 absmax per
2,048-element block.

Each step dequantizes a parameter's moments to float32, runs Adam's update on them (the update reads the fresh
float32 moments), and requantizes them for storage, as bitsandbytes' block-wise 8-bit Adam does. The code is the
dynamic (exponent + fraction) map of Dettmers' "8-bit Approximations for Parallelism in Deep Learning": 256 values
spanning seven decades below the block's absmax, signed for m and unsigned for v. A linear code (absmax/127 steps)
would round every second moment under absmax/254 to zero while its first moment survived, and Adam's update would
become lr·m̂/ε: 73,000× lr was seen. The dynamic code keeps second moments down to ~3e-7 of the block's largest,
and a second moment is never rounded to zero: a positive v below the smallest code is stored as that code (where
bitsandbytes rounds it to 0), so no element's update can become lr·m̂/ε.

State is 2 B per parameter plus 8 B per block (two absmaxes): resident 16 → 10 + 8/2048 B/param against fp32 Adam.
The moments are rounded, so the updates are close to Adam's, not equal (docs/api.md gives the measured figure).
"""
import numpy as np

from backend.tape.optim import Adam, _plus_scaled
from backend.tape.tensor import Tensor

BLOCK = 2048
EXPONENT_BITS = 7          # the decades the code spans below absmax: 1e-6 … 1


def dynamic_code(signed: bool) -> np.ndarray:
    """The 256 float32 values of the dynamic map, sorted; a code byte is an index into it.

    Decade i (10^(i-6) · (0.1, 1]) holds 2^i fraction steps per sign when signed (1 + 2 + … + 64 = 127 per sign),
    2^(i+1) when unsigned (2 + … + 128 = 254); with 0 and 1.0 that is 256 either way. Each value is the midpoint
    of its step, so no value is lost to a step's edge.
    """
    values = [0.0, 1.0]
    for i in range(EXPONENT_BITS):
        steps = 2 ** i if signed else 2 ** (i + 1)
        edges = np.linspace(0.1, 1.0, steps + 1)
        means = 10.0 ** (i - (EXPONENT_BITS - 1)) * (edges[:-1] + edges[1:]) / 2
        values += means.tolist() + ((-means).tolist() if signed else [])
    assert len(values) == 256
    return np.array(sorted(values), dtype=np.float32)


SIGNED_CODE = dynamic_code(signed=True)
UNSIGNED_CODE = dynamic_code(signed=False)


def _padded_blocks(values, n_blocks):
    padded = np.zeros(n_blocks * BLOCK, dtype=np.float32)
    padded[:values.size] = values
    return padded.reshape(n_blocks, BLOCK)


def quantize(values, codes, absmax, code, keep_positive=False):
    """Write `values` (float32, flat) into uint8 `codes` (indices into `code`) with each block's absmax in `absmax`:
    the nearest code, except that with `keep_positive` a positive value never becomes 0."""
    blocks = _padded_blocks(values, len(absmax))
    absmax[...] = np.abs(blocks).max(axis=1)
    normalised = (blocks / np.where(absmax > 0, absmax, 1)[:, None]).reshape(-1)[:values.size]
    above = np.clip(np.searchsorted(code, normalised), 1, len(code) - 1)
    nearest = np.where((normalised - code[above - 1]) < (code[above] - normalised), above - 1, above)
    if keep_positive:
        smallest_positive = np.searchsorted(code, 0.0, side="right")
        nearest = np.where(normalised > 0, np.maximum(nearest, smallest_positive), nearest)
    codes[...] = nearest.astype(np.uint8)


def dequantize(codes, absmax, code):
    """The float32 values of uint8 `codes` under their blocks' absmax."""
    return (_padded_blocks(code[codes], len(absmax)) * absmax[:, None]).reshape(-1)[:codes.size]


def blocks_of(size):
    return -(-size // BLOCK)


class Adam8bit(Adam):
    """torch.optim.Adam's update (L2 weight decay coupled into g) over 8-bit block-quantized m and v."""

    def update(self, index, p):
        beta1, beta2 = self.betas
        g = p.grad.astype(np.float32).reshape(-1)
        if self.weight_decay != 0:
            g = _plus_scaled(g, self.weight_decay, p.data.reshape(-1).astype(np.float32))
        if index not in self.state:
            self.state[index] = self._fresh_state(p)
        state = self.state[index]
        state["step"] += 1
        m = dequantize(state["m"].data, state["m_absmax"].data, SIGNED_CODE)
        v = dequantize(state["v"].data, state["v_absmax"].data, UNSIGNED_CODE)
        m += (1 - beta1) * (g - m)
        v *= beta2
        v += (1 - beta2) * g * g
        step_size = self.lr / (1 - beta1 ** state["step"])
        denom = np.sqrt(v) / (1 - beta2 ** state["step"]) ** 0.5 + self.eps
        p.data -= (step_size * m / denom).reshape(p.data.shape).astype(p.data.dtype)
        quantize(m, state["m"].data, state["m_absmax"].data, SIGNED_CODE)
        quantize(v, state["v"].data, state["v_absmax"].data, UNSIGNED_CODE, keep_positive=True)

    @staticmethod
    def _fresh_state(p):
        name = p.name or "param"
        blocks = blocks_of(p.data.size)
        zero_code = {"m": int(np.flatnonzero(SIGNED_CODE == 0)[0]), "v": int(np.flatnonzero(UNSIGNED_CODE == 0)[0])}

        def codes(moment):
            return Tensor.allocate(np.full(p.data.size, zero_code[moment], dtype=np.uint8), "optimizer",
                                   name=f"{name}.{moment}_8bit")

        def absmax(moment):
            return Tensor.allocate(np.zeros(blocks, dtype=np.float32), "optimizer", name=f"{name}.{moment}_absmax")

        return {"step": 0, "m": codes("m"), "v": codes("v"), "m_absmax": absmax("m"), "v_absmax": absmax("v")}


def state_bytes(param_sizes):
    """The formula: 2 B per element (8-bit m and v) plus two float32 absmaxes per 2,048-element block, per tensor."""
    return sum(2 * n + 2 * 4 * blocks_of(n) for n in param_sizes)
