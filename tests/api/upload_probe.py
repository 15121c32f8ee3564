"""One upload measured from a fresh process, as a worker would answer it: the status, the CPU seconds the request
took and how far the process's peak RSS rose over its idle level (a warmed app that has already checked a real
version 2 document). Run by tests/api/test_upload_bombs.py:

    .venv/bin/python -m tests.api.upload_probe WARMUP.json BODY.json DATABASE_URL
"""
import json
import resource
import sys
import time


def peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024        # Linux reports KiB


def main(warmup_path, body_path, database_url):
    from app import create_app
    from tests.settings import GENEROUS_RATE_LIMITS
    app = create_app({"TESTING": True, "DATABASE_URL": database_url, "RATE_LIMITS": GENEROUS_RATE_LIMITS})
    client = app.test_client()
    warmup = open(warmup_path, "rb").read()
    first = client.post("/api/traces", data=warmup, content_type="application/json")
    assert first.status_code == 201, first.get_json()
    body = open(body_path, "rb").read()
    idle = peak_rss_bytes()
    started = time.process_time()
    response = client.post("/api/traces", data=body, content_type="application/json")
    cpu_s = time.process_time() - started
    print(json.dumps({"status": response.status_code, "cpu_s": cpu_s, "rss_growth": peak_rss_bytes() - idle,
                      "body_bytes": len(body), "answer": response.get_json()}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
