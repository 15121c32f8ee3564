"""What the training-step knobs cost and save, each against a baseline measured in the same run:

- numpy's float16 matmul against float32 (it has no BLAS kernel: the work price's FLOAT16_MATMUL_FLOP_US),
  and ml_dtypes' bfloat16 against float32 (computed in float32);
- the traced peak of deep-mlp with accumulate 1, 2, 4, 8 against accumulate 1;
- the persistent bytes per parameter of Adam, adam8bit and mixed precision against fp32 Adam;
- each run's CPU time against its work price (the work cap must stay an upper bound);
- 8-bit Adam against fp32 Adam over 100 steps of random gradients on deep-mlp and transformer-tiny: the worst
  tensor's displacement distance (relative L2) and the largest update ÷ lr (backend/models/optimizer_drift.py).

    .venv/bin/python bench/training_knobs.py
"""
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backend.driver import trace_spec  # noqa: E402
from backend.driver.work import price  # noqa: E402
from backend.models import presets, validate_spec  # noqa: E402
from backend.models.optimizer_drift import adam8bit_against_adam  # noqa: E402


def matmul_seconds(dtype, rounds=5):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(512, 256)).astype(dtype), rng.normal(size=(256, 256)).astype(dtype)
    start = time.process_time()
    for _ in range(rounds):
        a @ b
    return (time.process_time() - start) / rounds


def traced(spec):
    start = time.process_time()
    document = trace_spec(spec, measure=False, deadline_s=120)
    return document, time.process_time() - start


def main():
    base = matmul_seconds(np.float32)
    flops = 2 * 512 * 256 * 256
    print(f"matmul 512x256 @ 256x256: float32 {flops / base / 1e9:.1f} GFLOP/s")
    for name, dtype in (("float16", np.float16), ("bfloat16", ml_dtypes.bfloat16)):
        print(f"  {name}: {matmul_seconds(dtype) / base:.1f}x float32's time")

    print("deep-mlp, accumulate N: traced peak / N=1's, CPU s / priced s")
    reference = None
    for n in (1, 2, 4, 8):
        spec = {**presets.get("deep-mlp"), "accumulate": n}
        document, cpu = traced(spec)
        peak = document["summary"]["peak_bytes"]
        reference = reference or peak
        print(f"  N={n}: peak {peak:,} B = {peak / reference:.2f}x, CPU {cpu:.2f} s / price "
              f"{price(validate_spec(spec)).work_us / 1e6:.2f} s")

    print("persistent bytes per parameter (weights + grads + optimizer state after the step) / fp32 Adam's")
    model = {**presets.get("mixed-precision")}
    model.pop("precision")
    variants = {"adam": model, "adam8bit": {**model, "optimizer": {"type": "adam8bit"}},
                "adam + float16 autocast": presets.get("mixed-precision"),
                "adam8bit + float16 autocast": {**presets.get("mixed-precision"), "optimizer": {"type": "adam8bit"}}}
    adam = None
    for name, spec in variants.items():
        document, cpu = traced(spec)
        resident = document["summary"]["resident"]
        adam = adam or resident["bytes_per_param"]
        print(f"  {name}: {resident['bytes_per_param']:.3f} B/param = {resident['bytes_per_param'] / adam:.3f}x, "
              f"peak {document['summary']['peak_bytes']:,} B, CPU {cpu:.2f} s / price "
              f"{price(validate_spec(spec)).work_us / 1e6:.2f} s")

    print("adam8bit against fp32 Adam, 100 steps of random gradients, seeds 0-3: worst tensor's "
          "‖Δ8bit − Δfp32‖ / ‖Δfp32‖, largest |update| / lr")
    for preset in ("deep-mlp", "transformer-tiny"):
        figures = [adam8bit_against_adam(preset, steps=100, seed=seed) for seed in range(4)]
        print(f"  {preset}: distance ≤ {max(f[0] for f in figures):.2%}, update ≤ {max(f[1] for f in figures):.2f}x lr")


if __name__ == "__main__":
    main()
