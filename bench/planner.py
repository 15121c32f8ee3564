"""Planner solve times: the chain DP at L = 1,000 and one planned trace of transformer-tiny. Run by hand.

    .venv/bin/python -m bench.planner
"""
import time

from backend.models import presets
from backend.planner.chain import min_peak_segments
from backend.trace.run import trace_spec


def main():
    start = time.perf_counter()
    peak, segments = min_peak_segments([1.0] * 1000, [1.0] * 1000)
    print(f"chain DP, L=1000 uniform: {time.perf_counter() - start:.3f} s  (target < 1 s)  "
          f"peak {peak:.0f} layer-units, {len(segments)} segments")
    start = time.perf_counter()
    document = trace_spec(presets.get("transformer-tiny"), checkpoint={"policy": "sqrt"}, measure=False)
    schedule = document["schedule"]
    print(f"transformer-tiny traced with a sqrt schedule: {time.perf_counter() - start:.3f} s; "
          f"predicted {schedule['predicted_peak_bytes']} B, executed {schedule['executed_peak_bytes']} B, "
          f"grads_match {schedule['grads_match']}")
    print("exact MILP (Checkmate): not implemented yet — no solve time or optimality gap to report")


if __name__ == "__main__":
    main()
