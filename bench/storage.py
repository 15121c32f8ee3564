"""How much disk an adversarial client can fill: cookieless workspace writes and worst-case snapshots, on loopback.

    .venv/bin/python bench/storage.py                      # against this checkout, gunicorn with 4 workers
    .venv/bin/python bench/storage.py --root /tmp/other    # against another checkout (e.g. `git archive main`)

Two phases against a fresh SQLite file, each bounded in time and count:
1. `--clients` clients PUT a ~242 KiB workspace (under the 256 KiB cap) with no cookie, as fast as they can, for `--seconds`;
2. `--snapshots` POSTs of the 204-byte spec (repeat 64 x repeat 60 x [linear 1, tanh]) whose trace is 28.5 MiB.
Printed: the answers by status, and the database's growth in used pages per phase. Run by hand.
"""
import argparse
import collections
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINEAR = {"type": "linear", "out": 1}
WORST_SPEC = {"batch": 1, "input": {"kind": "features", "size": 1}, "layers": [
    {"type": "repeat", "times": 64, "layers": [{"type": "repeat", "times": 60, "layers": [LINEAR, {"type": "tanh"}]}]}]}
BIG_WORKSPACE = {"spec": {"name": "filler"}, "view": {"step": 0},
                 "history": {"undo": [{"blob": f"{i:04d}" * 15_500} for i in range(4)], "redo": []}}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def send(request: urllib.request.Request) -> int:
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as error:
        error.read()
        return error.code
    except OSError:
        return 0


def database_bytes(folder: str) -> int:
    """The database's used bytes as a reader sees them (committed pages, WAL included, free pages not)."""
    with sqlite3.connect(os.path.join(folder, "storage.sqlite")) as connection:
        pages, free, size = (connection.execute(f"PRAGMA {name}").fetchone()[0]
                             for name in ("page_count", "freelist_count", "page_size"))
    return (pages - free) * size


def wait_until_ready(base: str, server: subprocess.Popen) -> None:
    for _ in range(300):
        if server.poll() is not None:
            raise SystemExit(f"the server exited with code {server.returncode}")
        if send(urllib.request.Request(f"{base}/api/presets")) == 200:
            return
        time.sleep(0.1)
    raise SystemExit("the server did not answer within 30 s")


def fill_workspaces(base: str, clients: int, seconds: float) -> collections.Counter:
    payload = json.dumps(BIG_WORKSPACE).encode()
    statuses, lock, deadline = collections.Counter(), threading.Lock(), time.monotonic() + seconds

    def client():
        while time.monotonic() < deadline:
            status = send(urllib.request.Request(f"{base}/api/session", data=payload, method="PUT",
                                                 headers={"Content-Type": "application/json"}))
            with lock:
                statuses[status] += 1
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


def share_worst(base: str, count: int) -> collections.Counter:
    payload = json.dumps({"spec": WORST_SPEC, "view": {"step": 0}}).encode()
    return collections.Counter(send(urllib.request.Request(f"{base}/api/snapshots", data=payload, method="POST",
                                                           headers={"Content-Type": "application/json"}))
                               for _ in range(count))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(ROOT), help="the checkout whose app:create_app() is served")
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--snapshots", type=int, default=3)
    args = parser.parse_args()
    print(f"storage bench: {args.root}; gunicorn -w 4 (timeout 120 s); SQLite WAL on loopback")
    with tempfile.TemporaryDirectory(prefix="tapescope-storage-") as folder:
        port = free_port()
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{folder}/storage.sqlite", "TAPESCOPE_SECRET_KEY": "b" * 64}
        server = subprocess.Popen([sys.executable, "-m", "gunicorn", "-w", "4", "-t", "120", "-b", f"127.0.0.1:{port}",
                                   "--log-level", "error", "app:create_app()"], cwd=args.root, env=env,
                                  stdout=subprocess.DEVNULL, stderr=open(os.path.join(folder, "server.log"), "w"))
        base = f"http://127.0.0.1:{port}"
        try:
            wait_until_ready(base, server)
            before = database_bytes(folder)
            statuses = fill_workspaces(base, args.clients, args.seconds)
            grown = database_bytes(folder) - before
            print(f"  cookieless PUTs of {len(json.dumps(BIG_WORKSPACE)) / 1024:.0f} KiB, {args.clients} clients, "
                  f"{args.seconds:.0f} s: {dict(sorted(statuses.items()))}; database grew {grown / 2**20:.1f} MiB")
            before = database_bytes(folder)
            started = time.perf_counter()
            statuses = share_worst(base, args.snapshots)
            grown = database_bytes(folder) - before
            created = statuses.get(201, 0)
            print(f"  worst-case snapshots x{args.snapshots}: {dict(sorted(statuses.items()))} in "
                  f"{time.perf_counter() - started:.1f} s; database grew {grown / 2**20:.1f} MiB"
                  + (f" ({grown / created / 2**20:.2f} MiB each)" if created else ""))
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
