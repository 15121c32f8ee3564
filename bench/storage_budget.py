"""A flood against the storage budget: bytes written per minute from 16 addresses, and what the store holds.

    .venv/bin/python bench/storage_budget.py                    # 16 addresses, 20 s, a 4 MiB budget
    .venv/bin/python bench/storage_budget.py --seconds 60 --budget-mib 16

Each address opens fresh browsers (no cookie) that save a ~48 KB workspace and post a recorded seed-tape run (~43 KB, a new link each time), as fast as
the app answers (in process, the shipped rate limits, a fresh SQLite file). Printed: the answers by status, the
bytes the clients sent per minute, and the store's own count of what it holds against the budget (with the
database file's size beside it): the ratio stored / budget must stay ≤ 1 whatever the rate. Run by hand.
"""
import argparse
import collections
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app import create_app  # noqa: E402
from backend.driver import trace_spec  # noqa: E402
from backend.models import presets  # noqa: E402
from backend.store import current_db  # noqa: E402
from backend.trace.document_versions import pack  # noqa: E402
from backend.store.budget import stored_bytes  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--addresses", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--budget-mib", type=float, default=4.0)
    args = parser.parse_args()
    budget = int(args.budget_mib * 1024 * 1024)
    folder = tempfile.mkdtemp(prefix="tapescope-budget-")
    database = os.path.join(folder, "store.sqlite")
    app = create_app({"DATABASE_URL": f"sqlite:///{database}", "STORAGE_MAX_BYTES": budget, "TESTING": True})
    document = json.loads(json.dumps(pack(trace_spec(presets.get("seed-tape"), measure=False))))
    statuses, sent = collections.Counter(), 0
    ends = time.monotonic() + args.seconds
    started = time.monotonic()
    while time.monotonic() < ends:
        for host in range(args.addresses):
            client = app.test_client()
            client.environ_base["REMOTE_ADDR"] = f"127.0.0.{host + 1}"
            workspace = json.dumps({"spec": {"junk": os.urandom(24_000).hex()}, "view": {"step": 0}})
            document["spec"]["name"] = f"flood {os.urandom(6).hex()}"       # a new link each time
            snapshot = json.dumps(document)
            statuses[("PUT /api/session", client.put("/api/session", data=workspace,
                                                     content_type="application/json").status_code)] += 1
            statuses[("POST /api/traces", client.post("/api/traces", data=snapshot,
                                                      content_type="application/json").status_code)] += 1
            sent += len(workspace) + len(snapshot)
    minutes = (time.monotonic() - started) / 60
    with app.app_context():
        held = stored_bytes(current_db())
    for (route, status), count in sorted(statuses.items()):
        print(f"{route:18} {status}: {count}")
    print(f"sent {sent / minutes / 2 ** 20:,.1f} MiB/min from {args.addresses} addresses for {args.seconds:g} s")
    print(f"stored {held / 2 ** 20:,.2f} MiB of a {budget / 2 ** 20:,.2f} MiB budget: ratio {held / budget:.3f} "
          f"(database file {os.path.getsize(database) / 2 ** 20:,.2f} MiB)")


if __name__ == "__main__":
    main()
