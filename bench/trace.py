"""Benchmark: tracing transformer-tiny against its plain forward+backward with no listener.

Prints the ratio (recorded run + document) / plain run, the absolute trace time, the document size, and the
full POST-equivalent time including the tracemalloc measurement run. Run: python bench/trace.py
"""
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backend.models import presets, validate_spec  # noqa: E402
from backend.driver import trace_spec  # noqa: E402
from backend.trace.document_versions import pack  # noqa: E402
from backend.trace.run import record, run_model  # noqa: E402


def best_of(fn, rounds=15):
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), sorted(times)[len(times) // 2]


def main(preset="transformer-tiny"):
    spec = validate_spec(presets.get(preset))
    plain_best, plain_median = best_of(lambda: run_model(spec))
    traced_best, traced_median = best_of(lambda: record(spec))
    full_best, full_median = best_of(lambda: trace_spec(spec))
    size = len(json.dumps(pack(trace_spec(spec)), separators=(",", ":")))        # what POST /api/trace sends
    print(f"{preset}: plain forward+backward+step {plain_best * 1e3:.1f} ms (median {plain_median * 1e3:.1f})")
    print(f"  recorded + document      {traced_best * 1e3:.1f} ms (median {traced_median * 1e3:.1f})"
          f"  ratio {traced_best / plain_best:.2f}x (target <= 3x, < 100 ms)")
    print(f"  with tracemalloc run     {full_best * 1e3:.1f} ms (median {full_median * 1e3:.1f})"
          f"  ratio {full_best / plain_best:.2f}x")
    print(f"  document size            {size / 1e6:.3f} MB, schema_version 2 (target <= 1 MB)")


if __name__ == "__main__":
    main(*sys.argv[1:])
