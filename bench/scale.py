"""How trace cost grows with the tape: time per tape entry and document bytes per entry, run by hand.

    .venv/bin/python bench/scale.py              # 500, 2,000, 8,000 and 20,000 entries (those the work cap accepts)
    .venv/bin/python bench/scale.py --uncapped   # every size, the work cap lifted
    .venv/bin/python bench/scale.py --calibrate  # the work cap's price against CPU time (how it was calibrated)

The specs are issue 15's: repeat 64 x repeat N x [linear 1, tanh, linear 1, tanh, linear 1], then linear 1, on a
1-feature input, N scaled for the tape length. Each is traced as POST /api/trace would (tracemalloc run
included), without and with {"policy": "sqrt"}, in this process; best of a few rounds. µs/entry is CPU time
(the machine is shared; wall time is printed beside it). "priced" is the work cap's estimate of the CPU time.
Goals: the largest size's µs/entry within 2x of the smallest's; document bytes per entry at 20,000 entries
<= 1.5 KB. Bytes are printed for the expanded form (schema_version 1, what was sent before) and for
schema_version 2 (what is sent now), both compact JSON of the same run; "serve" is what turning the run into
the response's text costs: json.dumps of v1 against pack + json.dumps of v2.
"""
import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import backend.driver as driver  # noqa: E402
from backend.driver import work  # noqa: E402
from backend.models import CapError  # noqa: E402
from backend.trace.document_versions import pack  # noqa: E402

LINEAR = {"type": "linear", "out": 1}
SIZES = {500: 1, 2_000: 4, 8_000: 16, 20_000: 39}      # tape entries -> inner repeat count


def issue_spec(inner, outer=64):
    body = [LINEAR, {"type": "tanh"}, LINEAR, {"type": "tanh"}, LINEAR]
    return {"batch": 1, "input": {"kind": "features", "size": 1},
            "layers": [{"type": "repeat", "times": outer, "layers": [{"type": "repeat", "times": inner,
                                                                      "layers": body}]}, LINEAR]}


CALIBRATION = {        # the work cap's three terms, each dominating one spec (CPU time against the price)
    "entries: issue 15's spec, repeat 64 x 16": issue_spec(16),
    "matmul FLOPs: batch 1024, 4 x linear 1024": {
        "batch": 1024, "input": {"kind": "features", "size": 1024},
        "layers": [{"type": "linear", "out": 1024}] * 4},
    "elements: batch 4096 x 1024, linear 1024 + 6 x tanh": {
        "batch": 4096, "input": {"kind": "features", "size": 1024},
        "layers": [{"type": "linear", "out": 1024}] + [{"type": "tanh"}] * 6},
}


def calibrate(rounds):
    """Measured CPU seconds against the priced ones for the specs that each stress one term of the price."""
    print(f"{'spec':<52} {'checkpoint':>10} {'cpu':>8} {'priced':>8} {'priced/cpu':>10}")
    for name, spec in CALIBRATION.items():
        for policy in (None, "sqrt"):
            checkpoint = {"policy": policy} if policy else None
            estimate = work.estimate_work_us(driver.validate_spec(spec), checkpoint) / 1e6
            _wall, seconds, _document = timed(spec, checkpoint, rounds)
            print(f"{name:<52} {policy or '-':>10} {seconds:>7.2f}s {estimate:>7.2f}s {estimate / seconds:>10.2f}")


def timed(spec, checkpoint, rounds):
    """(best wall seconds, best CPU seconds of this process, the document): CPU time is what the work cap
    prices; wall time is what a client waits, and grows when other processes share the two cores."""
    best_wall, best_cpu, document = float("inf"), float("inf"), None
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        document = driver.trace_spec(spec, checkpoint)
        best_wall, best_cpu = min(best_wall, time.perf_counter() - wall), min(best_cpu, time.process_time() - cpu)
        if best_wall > 2.0:
            break                      # one round is enough for the long ones
    return best_wall, best_cpu, document


def served(document, form):
    """(bytes, CPU seconds) of the response text of `document` in a form: the compact JSON a client receives."""
    started = time.process_time()
    text = json.dumps(form(document), separators=(",", ":"))
    return len(text), time.process_time() - started


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--uncapped", action="store_true", help="lift the work cap and the deadline")
    parser.add_argument("--calibrate", action="store_true", help="price against CPU time on the calibration specs")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.uncapped or args.calibrate:
        work.WORK_BUDGET_US = 10 ** 15
        driver.DEADLINE_S = 10 ** 6
    if args.calibrate:
        return calibrate(args.rounds)
    rows = {None: [], "sqrt": []}
    print(f"{'entries':>8} {'checkpoint':>10} {'wall':>8} {'cpu':>8} {'µs/entry':>9} {'priced':>8} "
          f"{'v1 B/entry':>10} {'v2 B/entry':>10} {'v2/v1':>6} {'serve v1':>9} {'serve v2':>9}")
    for target, inner in SIZES.items():
        spec = issue_spec(inner)
        for policy in (None, "sqrt"):
            checkpoint = {"policy": policy} if policy else None
            estimate = work.estimate_work_us(driver.validate_spec(spec), checkpoint)
            try:
                wall, seconds, document = timed(spec, checkpoint, args.rounds)
            except CapError as refused:
                print(f"{target:>8,} {policy or '-':>10}  refused (413): {refused.message}")
                continue
            except driver.TimeBudgetExceeded as stopped:
                print(f"{target:>8,} {policy or '-':>10}  stopped (503): {stopped}; the machine is busier than "
                      f"the price assumes (priced {estimate / 1e6:.2f} s of CPU)")
                continue
            entries = len(document["tape"])
            (v1_bytes, v1_s), (v2_bytes, v2_s) = served(document, lambda d: d), served(document, pack)
            rows[policy].append((entries, seconds / entries * 1e6))
            print(f"{entries:>8,} {policy or '-':>10} {wall:>7.2f}s {seconds:>7.2f}s {seconds / entries * 1e6:>9.0f} "
                  f"{estimate / 1e6:>7.2f}s {v1_bytes / entries:>10.0f} {v2_bytes / entries:>10.0f} "
                  f"{v2_bytes / v1_bytes:>6.2f} {v1_s:>8.2f}s {v2_s:>8.2f}s")
    for policy, found in rows.items():
        if len(found) >= 2:
            (small, small_us), (large, large_us) = found[0], found[-1]
            print(f"{policy or 'no checkpoint'}: {large:,} entries cost {large_us / small_us:.2f}x the µs/entry of "
                  f"{small:,} (goal <= 2x)")


if __name__ == "__main__":
    main()
