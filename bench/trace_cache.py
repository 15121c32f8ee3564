"""Benchmark: POST /api/trace asked again (answered from the app's TraceCache) against its first answer (a run), per
preset, plain and with the sqrt checkpoint (its schedules planned), through the Flask test client with gzip accepted
as a browser asks. Both are medians over fresh apps in the same run (the first answer) and repeats on one app (the
kept one), so a busy machine slows both; the ratio is what matters.

    .venv/bin/python bench/trace_cache.py [--repeats N]
"""
import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app import create_app  # noqa: E402
from backend.models import presets  # noqa: E402
from tests.settings import app_config  # noqa: E402

PRESETS = ["seed-tape", "deep-mlp", "transformer-tiny", "grad-accumulation"]
GZIP = {"Accept-Encoding": "gzip"}


def timed_post(client, body):
    start = time.perf_counter()
    answer = client.post("/api/trace", json=body, headers=GZIP)
    seconds = time.perf_counter() - start
    assert answer.status_code == 200, answer.get_data(as_text=True)[:300]
    return seconds, answer.headers["X-Trace-Cache"], len(answer.get_data())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    repeats = parser.parse_args().repeats
    folder = tempfile.mkdtemp(prefix="trace-cache-bench-")
    print(f"{'preset':18} {'checkpoint':10} {'first ms':>9} {'again ms':>9} {'first ÷ again':>14} {'gzip KiB':>9}")
    for preset in PRESETS:
        for checkpoint in (None, {"policy": "sqrt"}):
            body = {"spec": presets.get(preset), "checkpoint": checkpoint}
            first, again, size = [], [], 0
            for repeat in range(repeats):
                client = create_app(app_config(f"sqlite:///{folder}/{preset}-{repeat}.sqlite")).test_client()
                seconds, kept, size = timed_post(client, body)
                assert kept == "miss"
                first.append(seconds)
                seconds, kept, _ = timed_post(client, body)
                assert kept == "hit"
                again.append(seconds)
            first_s, again_s = statistics.median(first), statistics.median(again)
            policy = (checkpoint or {}).get("policy", "none")
            print(f"{preset:18} {policy:10} {first_s * 1e3:9.1f} {again_s * 1e3:9.1f} "
                  f"{first_s / again_s:13.1f}× {size / 1024:9.1f}")


if __name__ == "__main__":
    main()
