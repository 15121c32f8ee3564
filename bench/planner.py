"""Planner solve times, run by hand:  .venv/bin/python -m bench.planner

- the chain DP over L = 1,000 uniform layers (target < 1 s);
- the exact integer program (HiGHS via scipy.optimize.milp) over transformer-tiny's recompute units at budgets
  from 95% to 70% of the un-checkpointed peak (target < 10 s), with its status and optimality gap;
- one planned trace of transformer-tiny end to end;
- the memory core (backend/trace/memory.py) against a Python loop over the same difference array (how each
  predictor counted before it), on a base run's storages and on 300 and 5,000 random lifetimes, as a ratio.
"""
import random
import time
import timeit

import numpy as np

from backend.models import presets, validate_spec
from backend.planner import ilp
from backend.planner.chain import min_peak_segments
from backend.planner.base_run import BaseRun
from backend.planner.selective import SelectiveBase
from backend.driver import trace_spec
from backend.trace.memory import lifetimes_of, live_bytes
from backend.trace.run import record


def main():
    start = time.perf_counter()
    peak, segments = min_peak_segments([1.0] * 1000, [1.0] * 1000)
    print(f"chain DP, L=1000 uniform: {time.perf_counter() - start:.3f} s  (target < 1 s)  "
          f"peak {peak:.0f} layer-units, {len(segments)} segments")

    for optimizer in ("adam", "sgd"):
        spec = presets.get("transformer-tiny")
        spec["optimizer"] = {"type": optimizer, "lr": 0.01}
        document, _ = record(validate_spec(spec))
        base = SelectiveBase(BaseRun.from_document(document))
        start = time.perf_counter()
        program = ilp.Program(base)            # units and their exact deltas: built once per base run
        built_ms = (time.perf_counter() - start) * 1e3
        full = document["summary"]["peak_bytes"]
        print(f"transformer-tiny ({optimizer}): {len(document['tape'])} entries, {len(program.choices)} recompute "
              f"units, peak {full} B; program built in {built_ms:.1f} ms")
        for fraction in (0.95, 0.9, 0.8, 0.7):
            result = program.solve(int(full * fraction), time_limit_s=10.0)
            print(f"  MILP budget {fraction:.0%}: {result['solve_s'] * 1e3:7.1f} ms  status {result['status']:<10} "
                  f"gap {result['gap']}  peak {result['predicted_peak_bytes']} B  "
                  f"recompute {result['recompute_flops']} FLOPs")

        tight = program.solve(int(full * 0.9), time_limit_s=0.001)
        print(f"  MILP budget 90% with a 1 ms time limit: status {tight['status']}, gap {tight['gap']}, "
              f"peak {tight['predicted_peak_bytes']} B")

    start = time.perf_counter()
    document = trace_spec(presets.get("transformer-tiny"), checkpoint={"policy": "sqrt"}, measure=False)
    schedule = document["schedule"]
    print(f"transformer-tiny traced with a sqrt schedule, every heuristic executed, Pareto swept: "
          f"{time.perf_counter() - start:.3f} s; predicted {schedule['predicted_peak_bytes']} B, "
          f"executed {schedule['executed_peak_bytes']} B, grads_match {schedule['grads_match']}")

    memory_core(document)


def _loop_live_bytes(lifetimes, n_steps):
    """The baseline: one difference-array update per lifetime in Python, then the running sum."""
    delta = np.zeros(n_steps + 1, dtype=np.int64)
    for born, freed, nbytes in lifetimes:
        delta[born] += nbytes
        delta[n_steps if freed is None else freed + 1] -= nbytes
    return np.cumsum(delta)[:n_steps]


def memory_core(document):
    rng = random.Random(0)
    storages = list(lifetimes_of(document["storages"]))
    cases = [("transformer-tiny's storages (sqrt schedule)", storages, len(document["steps"]))]
    for n_lifetimes, n_steps in ((300, 200), (5000, 2000)):
        lifetimes = []
        for _ in range(n_lifetimes):
            born = rng.randrange(n_steps)
            freed = None if rng.random() < 0.1 else rng.randrange(born, n_steps)
            lifetimes.append((born, freed, rng.randrange(1, 10 ** 6)))
        cases.append((f"{n_lifetimes:,} random lifetimes over {n_steps:,} steps", lifetimes, n_steps))
    for label, lifetimes, n_steps in cases:
        assert np.array_equal(live_bytes(lifetimes, n_steps), _loop_live_bytes(lifetimes, n_steps))
        core = loop = float("inf")
        for _ in range(7):                  # interleaved, best of 7: a loaded machine slows both alike
            core = min(core, timeit.timeit(lambda: live_bytes(lifetimes, n_steps), number=20) / 20)
            loop = min(loop, timeit.timeit(lambda: _loop_live_bytes(lifetimes, n_steps), number=20) / 20)
        print(f"memory core, {label}: {core * 1e3:.3f} ms, {core / loop:.2f}x the Python loop's {loop * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
