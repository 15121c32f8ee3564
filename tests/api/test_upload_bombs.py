"""Uploads built to exhaust the server are answered 4xx before they allocate: a table whose count promises
hundreds of millions of rows, and a coded column whose index replicates a large value per row. Each is posted to
a fresh process (tests/api/upload_probe.py) that reports its status, CPU seconds and peak-RSS growth: within 2 s
of CPU and 10× the body's size over the worker's idle level (issue 25's goal)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from backend.driver import trace_spec
from backend.models import presets
from backend.trace.document_versions import pack

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def packed():
    return json.loads(json.dumps(pack(trace_spec(presets.get("seed-tape"), measure=False))))


def _count_bomb(document):
    document["storages"]["count"] = 200_000_000          # 42 KB that once asked for 7.4 GB
    return document


def _coded_bomb(document):
    rows = 300_000                                        # a 943 KB body that once cost 11 s and 372 MB
    document["storages"]["count"] = rows
    document["storages"]["columns"]["kind"] = {"values": [[0] * 200], "index": [0] * rows}
    return document


def _coded_within_count(document):
    count = document["storages"]["count"]                 # the index the right length, the value not flat
    document["storages"]["columns"]["kind"] = {"values": [[0] * 200], "index": [0] * count}
    return document


def _index_past_count(document):
    document["storages"]["columns"]["kind"] = {"values": ["param"], "index": [0] * 300_000}
    return document


@pytest.mark.parametrize("bomb,status", [(_count_bomb, 413), (_coded_bomb, 413), (_coded_within_count, 400),
                                         (_index_past_count, 400)])
def test_an_upload_bomb_is_refused_within_the_cpu_and_memory_goals(packed, bomb, status, tmp_path):
    warmup, body = tmp_path / "warmup.json", tmp_path / "body.json"
    warmup.write_text(json.dumps(packed))
    body.write_text(json.dumps(bomb(json.loads(json.dumps(packed)))))
    run = subprocess.run([sys.executable, "-m", "tests.api.upload_probe", str(warmup), str(body),
                          f"sqlite:///{tmp_path / 'store.db'}"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    measured = json.loads(run.stdout.strip().splitlines()[-1])
    print(bomb.__name__, {k: v for k, v in measured.items() if k != "answer"})
    assert measured["status"] == status, measured["answer"]
    assert measured["answer"]["problems"][0]["path"].startswith("storages")      # the field is named
    assert measured["cpu_s"] <= 2.0, measured
    assert measured["rss_growth"] <= 10 * measured["body_bytes"], measured
