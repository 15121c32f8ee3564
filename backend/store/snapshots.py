"""Snapshot rows: written once when a link is shared, read by id; never listed, never updated.

Two caps guard a row: the trace document's JSON (what a read sends back) and the row's bytes on disk (the
compressed trace plus spec, checkpoint, view and title), each raising StoredValueTooLarge before anything is written.
An identical snapshot is stored once (its content hash); the storage budget makes room before a new row.
"""
import hashlib
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.store import jsontext
from backend.store.budget import Budget, make_room
from backend.store.engine import write_transaction
from backend.store.ids import is_snapshot_id, new_snapshot_id
from backend.store.models import Snapshot


class StoredValueTooLarge(ValueError):
    """A value is over its stored-size cap; `what`, `size_bytes` and `limit_bytes` say which and by how much;
    `cap` names the cap as a 413 reply does."""

    def __init__(self, what: str, size_bytes: int, limit_bytes: int, cap: str):
        super().__init__(f"The {what} is {size_bytes:,} bytes; the limit is {limit_bytes:,} bytes.")
        self.what, self.size_bytes, self.limit_bytes, self.cap = what, size_bytes, limit_bytes, cap


@dataclass(frozen=True)
class SnapshotRecord:
    id: str
    spec: dict
    checkpoint: dict | None
    view: dict
    trace_json: str  # kept as text: responses splice it in rather than parse and re-encode megabytes
    schema_version: str
    engine_version: str
    created_at: datetime
    title: str | None


def create(db: Session, *, spec: dict, checkpoint: dict | None, view: dict, trace: dict,
           title: str | None = None, max_trace_bytes: int | None = None, max_stored_bytes: int | None = None,
           budget: Budget | None = None) -> str:
    """Store a snapshot and return its id: an identical one already stored is that one's id (nothing is written);
    a new one gets 128 random bits, which make a collision not worth a retry loop. With `budget`, room is made
    for it first (backend/store/budget.py)."""
    trace_json = jsontext.dump(trace)
    if max_trace_bytes is not None and len(trace_json) > max_trace_bytes:
        raise StoredValueTooLarge("trace document", len(trace_json), max_trace_bytes, "trace_bytes")
    texts = {"spec_json": jsontext.dump(spec), "checkpoint_json": jsontext.dump(checkpoint),
             "view_json": jsontext.dump(view)}
    content_hash = _content_hash(*texts.values(), trace_json, title or "")
    same = db.scalar(select(Snapshot.id).where(Snapshot.content_hash == content_hash).limit(1))
    if same is not None:
        return same
    row = Snapshot(
        id=new_snapshot_id(),
        **texts,
        trace_xz=jsontext.compress(trace_json),
        schema_version=str(trace.get("schema_version", "")),
        engine_version=str(trace.get("engine_version", "")),
        title=title,
        content_hash=content_hash,
    )
    size = stored_bytes(row)
    if max_stored_bytes is not None and size > max_stored_bytes:
        raise StoredValueTooLarge("snapshot, compressed,", size, max_stored_bytes, "snapshot_stored_bytes")
    if budget is not None:
        make_room(db, size, budget)
    with write_transaction(db):
        db.add(row)
    return row.id


def _content_hash(*texts: str) -> str:
    """sha256 over every value a snapshot holds, each length-prefixed so no two documents run together."""
    digest = hashlib.sha256()
    for text in texts:
        data = text.encode("utf-8")
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


def stored_bytes(row: Snapshot) -> int:
    """What a row costs on disk, near enough: its values' bytes (the database adds a small fixed overhead)."""
    texts = (row.id, row.spec_json, row.checkpoint_json, row.view_json, row.schema_version, row.engine_version,
             row.title or "")
    return len(row.trace_xz) + sum(len(text.encode("utf-8")) for text in texts)


def exists(db: Session, snapshot_id: str) -> bool:
    if not is_snapshot_id(snapshot_id):
        return False
    return db.scalar(select(Snapshot.id).where(Snapshot.id == snapshot_id)) is not None


def get(db: Session, snapshot_id: str) -> SnapshotRecord | None:
    """The snapshot with this id, or None; ids not shaped like ours are refused before any query."""
    if not is_snapshot_id(snapshot_id):
        return None
    row = db.scalars(select(Snapshot).where(Snapshot.id == snapshot_id)).one_or_none()
    if row is None:
        return None
    return SnapshotRecord(
        id=row.id,
        **jsontext.columns(row, "spec", "checkpoint", "view"),
        trace_json=jsontext.decompress(row.trace_xz),
        schema_version=row.schema_version,
        engine_version=row.engine_version,
        created_at=row.created_at,
        title=row.title,
    )
