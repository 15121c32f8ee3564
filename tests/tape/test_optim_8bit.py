"""8-bit Adam: block-wise int8 m and v (absmax/127 per 2,048 elements), its updates against fp32 Adam (close,
not equal) and its state bytes against the tape chapter's formula."""
import numpy as np

import backend.tape as T
from backend.tape import Adam, Adam8bit, events, parameter, tensor
from backend.tape.optim_8bit import BLOCK, dequantize, quantize, state_bytes


def test_quantize_round_trip_is_within_half_a_step_per_block():
    rng = np.random.default_rng(0)
    values = (rng.normal(0, 1, 5000) * np.repeat([1.0, 1e-3, 10.0], [2048, 2048, 904])).astype(np.float32)
    codes, scales = np.zeros(5000, np.int8), np.zeros(3, np.float32)
    quantize(values, codes, scales)
    for block in range(3):
        part = slice(block * BLOCK, (block + 1) * BLOCK)
        assert scales[block] == np.float32(np.abs(values[part]).max() / 127)
        error = np.abs(dequantize(codes, scales)[part] - values[part])
        assert error.max() <= scales[block] / 2 * (1 + 1e-6)
    assert np.abs(codes).max() == 127


def _train(make, steps=15):
    """A 64×64 weight under a loss whose gradient c + 0.3·w has a benign range in every block (|c| in 0.5-2):
    the regime the tape chapter says 8-bit moments work in (an outlier block is their risk)."""
    rng = np.random.default_rng(4)
    c = (rng.uniform(0.5, 2.0, (64, 64)) * rng.choice([-1, 1], (64, 64))).astype(np.float32)
    w = parameter(rng.normal(0, 0.2, (64, 64)).astype(np.float32), name="w")
    opt = make([w])
    trajectory = []
    for _ in range(steps):
        opt.zero_grad()
        ((w * tensor(c)).sum() + 0.15 * (w * w).sum()).backward()
        before = w.data.copy()
        opt.step()
        trajectory.append(w.data - before)
    return np.array(trajectory), opt


def test_updates_are_close_to_fp32_adam_but_not_equal():
    exact, _ = _train(lambda p: Adam(p, lr=1e-3))
    quantized, _ = _train(lambda p: Adam8bit(p, lr=1e-3))
    np.testing.assert_array_equal(exact[0], quantized[0])        # step 1 reads fresh moments: Adam's update
    assert not np.array_equal(exact[1:], quantized[1:])
    relative = np.linalg.norm(quantized - exact) / np.linalg.norm(exact)
    assert relative < 0.05
    cosine = (quantized * exact).sum() / (np.linalg.norm(quantized) * np.linalg.norm(exact))
    assert cosine > 0.999


def test_state_is_int8_codes_and_one_float32_scale_per_block():
    kinds = {}
    with events.listening(lambda kind, p: kinds.setdefault(p["tensor"].name, p["storage"].nbytes)
                          if kind == "alloc" and p["storage"].kind == "optimizer" else None):
        _, opt = _train(lambda p: Adam8bit(p, lr=1e-3), steps=1)
    assert kinds == {"w.m_int8": 4096, "w.v_int8": 4096, "w.m_scale": 8, "w.v_scale": 8}
    assert sum(kinds.values()) == state_bytes([4096]) == 2 * 4096 + 2 * 4 * 2
    state = opt.state[0]
    assert state["m"].data.dtype == np.int8 and state["m_scale"].data.dtype == np.float32
