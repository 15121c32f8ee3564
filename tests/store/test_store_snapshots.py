"""Snapshot rows: ids, round trips, malformed ids never queried, and 8 concurrent writers on one SQLite file."""
import threading

import pytest
from sqlalchemy import event
from sqlalchemy.orm import Session

from backend.store import snapshots
from backend.store.ids import SNAPSHOT_ID_PATTERN, is_snapshot_id, new_snapshot_id
from tests.concurrency import run_threads

TRACE = {"schema_version": 3, "engine_version": "9.9.9", "steps": [{"phase": "forward"}], "peak_bytes": 4096}


def _create(db, **overrides):
    fields = {"spec": {"preset": "seed-tape"}, "checkpoint": None,
              "view": {"step": 0, "selected": None, "zoom": None}, "trace": TRACE}
    return snapshots.create(db, **{**fields, **overrides})


def test_ids_are_128_bit_url_safe_and_distinct():
    ids = {new_snapshot_id() for _ in range(2000)}
    assert len(ids) == 2000
    for snapshot_id in ids:
        assert len(snapshot_id) >= 22  # 16 random bytes in base64url
        assert SNAPSHOT_ID_PATTERN.fullmatch(snapshot_id)


@pytest.mark.parametrize("candidate", [
    "", "short", "../../../etc/passwd", "a" * 21, "a" * 65, "abc%00defghijklmnopqrstu", "' OR 1=1 --aaaaaaaaaaaa",
    "aaaaaaaaaaaaaaaaaaaaaa\n", "ａａａａａａａａａａａａａａａａａａａａａａ", None, 12345, ["a" * 22],
])
def test_malformed_ids_are_refused(candidate):
    assert not is_snapshot_id(candidate)


def test_round_trip_keeps_every_field(engine):
    with Session(engine) as db:
        snapshot_id = _create(db, spec={"layers": [{"width": 3}], "name": "ünïcødé \ud800"},
                              checkpoint={"policy": "sqrt"}, view={"step": 14, "selected": "n7", "zoom": None},
                              title="Step 14 of the backward pass")
    with Session(engine) as db:
        record = snapshots.get(db, snapshot_id)
    assert record.spec == {"layers": [{"width": 3}], "name": "ünïcødé \ud800"}
    assert record.checkpoint == {"policy": "sqrt"}
    assert record.view == {"step": 14, "selected": "n7", "zoom": None}
    assert record.schema_version == "3" and record.engine_version == "9.9.9"
    assert record.title == "Step 14 of the backward pass"
    assert record.created_at.tzinfo is not None
    import json
    assert json.loads(record.trace_json) == TRACE


def test_unknown_id_reads_as_none(engine):
    with Session(engine) as db:
        assert snapshots.get(db, new_snapshot_id()) is None
        assert not snapshots.exists(db, new_snapshot_id())


def test_malformed_ids_never_reach_the_database(engine):
    statements = []
    event.listen(engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    with Session(engine) as db:
        for candidate in ["../x", "x' OR '1'='1", "a" * 5000, "%00"]:
            assert snapshots.get(db, candidate) is None
            assert not snapshots.exists(db, candidate)
        assert statements == []
        snapshots.get(db, new_snapshot_id())
    assert any("FROM snapshots" in statement for statement in statements)


def test_trace_over_the_cap_is_refused(engine):
    with Session(engine) as db, pytest.raises(snapshots.StoredValueTooLarge) as caught:
        _create(db, trace={**TRACE, "padding": "x" * 5000}, max_trace_bytes=1000)
    assert caught.value.limit_bytes == 1000 and caught.value.size_bytes > 5000


def test_eight_threads_write_fifty_snapshots_each(engine):
    written, errors = [], []
    barrier = threading.Barrier(8)

    def writer(thread_index):
        try:
            barrier.wait()
            with Session(engine) as db:
                for index in range(50):
                    view = {"step": index, "selected": f"t{thread_index}", "zoom": None}
                    written.append((_create(db, spec={"thread": thread_index, "index": index}, view=view),
                                    thread_index, index))
        except Exception as error:  # collected, asserted below
            errors.append(error)

    run_threads(writer, 8)

    assert errors == []
    assert len({snapshot_id for snapshot_id, _, _ in written}) == 400
    with Session(engine) as db:
        for snapshot_id, thread_index, index in written:
            record = snapshots.get(db, snapshot_id)
            assert record.spec == {"thread": thread_index, "index": index}
            assert record.view["step"] == index
