"""Snapshot create and read latency (p50/p99) with concurrent clients against a real server on loopback.

    .venv/bin/python bench/snapshots.py                       # gunicorn, 4 sync workers, 8 clients x 50
    .venv/bin/python bench/snapshots.py --server werkzeug     # the threaded dev server instead
    .venv/bin/python bench/snapshots.py --preset transformer-tiny --per-client 20

The server runs on a fresh SQLite file in a temporary folder. Each client thread creates a snapshot (the
server traces the spec and stores it), then reads it back and checks the spec; both requests are timed.
Run by hand; never timed inside tests.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from backend.models import presets  # noqa: E402  (after the path fix above)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# Every client is 127.0.0.1: raise the snapshot limit past the run's writes (the counting itself stays in).
BENCH_CONFIG = {"RATE_LIMITS": {"snapshot_create": "1000000 per minute"}}


def start_server(kind: str, port: int, workers: int, data_dir: str) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{data_dir}/bench.sqlite",
           "TAPESCOPE_SECRET_KEY": "bench-secret"}
    if kind == "gunicorn":
        command = [sys.executable, "-m", "gunicorn", "--workers", str(workers), "--bind", f"127.0.0.1:{port}",
                   "--log-level", "warning", f"app:create_app({BENCH_CONFIG!r})"]
    else:
        command = [sys.executable, "-c",
                   "import sys; from app import create_app; "
                   f"create_app({BENCH_CONFIG!r}).run(host='127.0.0.1', port={port}, threaded=True)"]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=open(
        os.path.join(data_dir, "server.log"), "w"))


def wait_until_ready(base: str, server: subprocess.Popen, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited with code {server.returncode}")
        try:
            with urllib.request.urlopen(f"{base}/api/snapshots/AAAAAAAAAAAAAAAAAAAAAA", timeout=2):
                pass
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit("the server did not answer within 30 s")


def timed(request: urllib.request.Request) -> tuple[float, dict]:
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as response:
        body = response.read()
        status = response.status
    elapsed_ms = (time.perf_counter() - started) * 1000
    return elapsed_ms, {"status": status, "body": json.loads(body)}


WARMUP_PER_CLIENT = 3  # untimed: lets every worker import the engine and open its connections first


def client(base: str, spec: dict, count: int, barrier: threading.Barrier, results: dict, errors: list) -> None:
    try:
        for _ in range(WARMUP_PER_CLIENT):
            payload = json.dumps({"spec": spec, "view": {"step": 0}}).encode()
            timed(urllib.request.Request(f"{base}/api/snapshots", data=payload, method="POST",
                                         headers={"Content-Type": "application/json"}))
        barrier.wait()
        for index in range(count):
            payload = json.dumps({"spec": spec, "view": {"step": index % 5, "selected": None}}).encode()
            create = urllib.request.Request(f"{base}/api/snapshots", data=payload, method="POST",
                                            headers={"Content-Type": "application/json"})
            create_ms, created = timed(create)
            assert created["status"] == 201, created
            read_ms, read = timed(urllib.request.Request(f"{base}/api/snapshots/{created['body']['id']}"))
            assert read["body"]["spec"] == spec and read["body"]["view"]["step"] == index % 5
            results["create"].append(create_ms)
            results["read"].append(read_ms)
    except Exception as error:  # reported after the run
        errors.append(repr(error))


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))  # nearest rank
    return ordered[rank]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=["gunicorn", "werkzeug"], default="gunicorn")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--per-client", type=int, default=50)
    parser.add_argument("--preset", default="seed-tape")
    args = parser.parse_args()

    spec = presets.get(args.preset)
    with tempfile.TemporaryDirectory(prefix="tapescope-bench-") as data_dir:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = start_server(args.server, port, args.workers, data_dir)
        try:
            wait_until_ready(base, server)
            results, errors = {"create": [], "read": []}, []
            barrier = threading.Barrier(args.clients)
            threads = [threading.Thread(target=client, args=(base, spec, args.per_client, barrier, results, errors))
                       for _ in range(args.clients)]
            started = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            wall_s = time.perf_counter() - started  # includes the short warm-up

        finally:
            server.terminate()
            server.wait(timeout=10)

    server_desc = f"gunicorn, {args.workers} sync workers" if args.server == "gunicorn" else "werkzeug, threaded"
    print(f"snapshots bench: {server_desc}; {args.clients} clients x {args.per_client}; preset {args.preset}; "
          f"SQLite WAL on loopback")
    if errors:
        print(f"  {len(errors)} client(s) failed, first: {errors[0]}")
    for name in ("create", "read"):
        values = results[name]
        if values:
            print(f"  {name:6s} n={len(values):4d}  p50 {percentile(values, 0.50):7.2f} ms  "
                  f"p99 {percentile(values, 0.99):7.2f} ms  mean {statistics.fmean(values):7.2f} ms  "
                  f"max {max(values):7.2f} ms")
    total = len(results["create"]) + len(results["read"])
    print(f"  {total} timed requests; {wall_s:.2f} s wall including warm-up; {os.cpu_count()} CPUs")
    if errors:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
