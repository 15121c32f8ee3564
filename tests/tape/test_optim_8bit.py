"""8-bit Adam: block-wise one-byte m and v on bitsandbytes' dynamic code (absmax per 2,048 elements), its updates
against fp32 Adam (close, not equal; bounded over 100 steps) and its state bytes against the tape chapter's formula."""
import numpy as np
import pytest

import backend.tape as T
from backend.tape import Adam, Adam8bit, events, parameter, tensor
from backend.tape.optim_8bit import BLOCK, SIGNED_CODE, UNSIGNED_CODE, dequantize, quantize, state_bytes
from backend.models.optimizer_drift import adam8bit_against_adam


def test_quantize_round_trip_is_within_half_a_code_step_per_block():
    rng = np.random.default_rng(0)
    values = (rng.normal(0, 1, 5000) * np.repeat([1.0, 1e-3, 10.0], [2048, 2048, 904])).astype(np.float32)
    codes, absmax = np.zeros(5000, np.uint8), np.zeros(3, np.float32)
    quantize(values, codes, absmax, SIGNED_CODE)
    restored = dequantize(codes, absmax, SIGNED_CODE)
    for block in range(3):
        part = slice(block * BLOCK, (block + 1) * BLOCK)
        assert absmax[block] == np.abs(values[part]).max()
        normalised = values[part] / absmax[block]
        gaps = np.diff(SIGNED_CODE)
        nearest = np.abs(SIGNED_CODE[None, :] - normalised[:, None]).argmin(axis=1)
        np.testing.assert_array_equal(codes[part], nearest)                     # the nearest code, every time
        half_gap = np.maximum(gaps[np.clip(nearest - 1, 0, 254)], gaps[np.clip(nearest, 0, 254)]) / 2
        assert np.all(np.abs(restored[part] / absmax[block] - normalised) <= half_gap * (1 + 1e-5))
    assert SIGNED_CODE[codes].max() == 1.0


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


def test_state_is_one_byte_codes_and_one_float32_absmax_per_block():
    kinds = {}
    with events.listening(lambda kind, p: kinds.setdefault(p["tensor"].name, p["storage"].nbytes)
                          if kind == events.ALLOC and p["storage"].kind == "optimizer" else None):
        _, opt = _train(lambda p: Adam8bit(p, lr=1e-3), steps=1)
    assert kinds == {"w.m_8bit": 4096, "w.v_8bit": 4096, "w.m_absmax": 8, "w.v_absmax": 8}
    assert sum(kinds.values()) == state_bytes([4096]) == 2 * 4096 + 2 * 4 * 2
    state = opt.state[0]
    assert state["m"].data.dtype == np.uint8 and state["m_absmax"].data.dtype == np.float32


def test_the_dynamic_codes_have_256_values_zero_and_one_and_span_seven_decades():
    for code, negatives in [(SIGNED_CODE, 127), (UNSIGNED_CODE, 0)]:
        assert code.size == 256 and np.all(np.diff(code) >= 0)
        assert 0.0 in code and code.max() == 1.0 and (code < 0).sum() == negatives
        smallest = np.abs(code[code != 0]).min()
        assert 1e-7 < smallest < 1e-6          # a value 10^6 below the block's absmax is still not zero


def test_a_second_moment_far_below_its_blocks_largest_is_kept():
    """The case a linear code broke: one block [1.0, 0.05, 0.05, 0.05] then [1.0, 1e-6, 1e-6, 1e-6]. With v
    quantized as absmax/127 steps, the small elements' v rounded to 0 while m survived, and step 2 moved a
    parameter to −31.2 where torch's Adam gives −0.00167."""
    grads = [np.array([1.0, 0.05, 0.05, 0.05], np.float32), np.array([1.0, 1e-6, 1e-6, 1e-6], np.float32)]

    def run(make):
        w = parameter(np.zeros(4, np.float32), name="w")
        opt = make([w])
        for g in grads:
            w.grad = g.copy()
            opt.step()
        return w.data.copy()

    exact, quantized = run(lambda p: Adam(p, lr=1e-3)), run(lambda p: Adam8bit(p, lr=1e-3))
    np.testing.assert_allclose(exact, [-0.002, -0.00167007, -0.00167007, -0.00167007], rtol=1e-5)
    np.testing.assert_allclose(quantized, exact, rtol=0.02)
    try:
        import torch
    except ImportError:
        return
    w = torch.zeros(4, requires_grad=True)
    opt = torch.optim.Adam([w], lr=1e-3)
    for g in grads:
        w.grad = torch.from_numpy(g.copy())
        opt.step()
    np.testing.assert_allclose(quantized, w.detach().numpy(), rtol=0.02)


@pytest.mark.parametrize("preset", ["deep-mlp", "transformer-tiny"])
def test_over_100_steps_of_random_gradients_8bit_adam_stays_with_adam(preset):
    """No update above 10× lr, and each parameter tensor's displacement from its start within 5% (relative L2)
    of fp32 Adam's from the same gradients (bench/training_knobs.py prints the figures)."""
    farthest, largest = adam8bit_against_adam(preset, steps=100)
    assert largest < 10, largest
    assert farthest < 0.05, farthest
