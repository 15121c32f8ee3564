"""Benchmark: a trace document's bytes on the wire, schema_version 1 against 2, raw and gzip-compressed.

Traces bench/scale.py's spec at about 1k, 5k and 20k tape entries and prints, for each form, its JSON bytes, its
gzip bytes (the level backend/api/compression.py uses, and level 9), the ratio to v1 raw and the time gzip took
(a median of a few rounds, so a busy machine shows in the ratios rather than in absolute times alone).
Run: .venv/bin/python bench/wire_bytes.py
"""
import gzip
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import backend.driver as driver  # noqa: E402
from backend.api.compression import GZIP_LEVEL  # noqa: E402
from backend.driver import work  # noqa: E402
from backend.trace.document_versions import pack  # noqa: E402
from bench.scale import issue_spec  # noqa: E402

ROUNDS = 3
SIZES = {"~1k": 2, "~5k": 10, "~20k": 39}      # bench/scale.py's inner repeat count


def gzip_ms(data, level):
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        packed = gzip.compress(data, compresslevel=level, mtime=0)
        times.append(1e3 * (time.perf_counter() - started))
    return len(packed), statistics.median(times)


def main():
    work.WORK_BUDGET_US = 10 ** 15
    driver.DEADLINE_S = 10 ** 6
    print("| entries | form | JSON | gzip -%d (ms) | gzip -9 (ms) | gzip -%d ÷ v1 JSON |" % (GZIP_LEVEL, GZIP_LEVEL))
    print("| --- | --- | --- | --- | --- | --- |")
    for label, inner in SIZES.items():
        expanded = driver.trace_spec(issue_spec(inner), None, measure=False)
        forms = {"v1": expanded, "v2": pack(expanded)}
        v1_bytes = None
        for name, document in forms.items():
            data = json.dumps(document, separators=(",", ":")).encode()
            v1_bytes = v1_bytes or len(data)
            fast, fast_ms = gzip_ms(data, GZIP_LEVEL)
            best, best_ms = gzip_ms(data, 9)
            print(f"| {len(expanded['tape']):,} | {name} | {len(data) / 1e6:.2f} MB | {fast / 1e6:.3f} MB ({fast_ms:.0f}) "
                  f"| {best / 1e6:.3f} MB ({best_ms:.0f}) | {fast / v1_bytes:.3f} |")


if __name__ == "__main__":
    main()
