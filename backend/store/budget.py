"""The storage budget: workspaces and snapshots together stay under one byte budget, whoever writes them.

Before a write that adds bytes (a new or grown workspace, a new snapshot), `make_room` counts what is stored (the
rows' values, as `snapshots.stored_bytes` counts one) and, when the write would pass the budget, frees room:

1. workspaces idle longest first (never the one being written): a browser whose workspace went gets the empty
   one, and the page restores its edit from its local draft;
2. then snapshots past their retention, oldest first;
3. snapshots within retention are kept, always: when they alone fill the budget the write is refused
   (StorageFull, a 507 that loses nothing already saved).

Per-address rate limits only stop floods; this is what bounds the disk (docs/storage.md, "How full it can get").
"""
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from backend.store.engine import StorageFull, write_transaction
from backend.store.models import Snapshot, UserSession, utc_now

SESSION_COLUMNS = (UserSession.spec_json, UserSession.checkpoint_json, UserSession.view_json,
                   UserSession.history_json, UserSession.origin_json, UserSession.baseline_json)
SNAPSHOT_COLUMNS = (Snapshot.spec_json, Snapshot.checkpoint_json, Snapshot.view_json, Snapshot.trace_xz,
                    Snapshot.schema_version, Snapshot.engine_version, Snapshot.title, Snapshot.id)
EVICT_BATCH = 200               # rows read per round when making room


class BudgetFull(StorageFull):
    """The budget is full of snapshots within their retention: a new write has no room (nothing is lost)."""


@dataclass(frozen=True)
class Budget:
    max_bytes: int               # sessions and snapshots together
    snapshot_retention: timedelta


def _size(columns):
    return sum((func.coalesce(func.length(column), 0) for column in columns), start=0)


def stored_bytes(db: Session) -> int:
    """What the workspaces and snapshots hold, near enough (their values' lengths)."""
    sessions = db.scalar(select(func.coalesce(func.sum(_size(SESSION_COLUMNS)), 0))) or 0
    snapshots = db.scalar(select(func.coalesce(func.sum(_size(SNAPSHOT_COLUMNS)), 0))) or 0
    return int(sessions) + int(snapshots)


def make_room(db: Session, incoming_bytes: int, budget: Budget, keep_session: str | None = None) -> dict:
    """Free room for `incoming_bytes` within the budget; how many rows of each went. StorageFull when even the
    snapshots within retention leave no room."""
    excess = stored_bytes(db) + incoming_bytes - budget.max_bytes
    evicted = {"sessions": 0, "snapshots": 0}
    if excess <= 0:
        return evicted
    excess, evicted["sessions"] = _evict(db, UserSession, SESSION_COLUMNS, UserSession.updated_at, excess,
                                         UserSession.id != keep_session if keep_session else None)
    if excess > 0:
        cutoff: datetime = utc_now() - budget.snapshot_retention
        excess, evicted["snapshots"] = _evict(db, Snapshot, SNAPSHOT_COLUMNS, Snapshot.created_at, excess,
                                              Snapshot.created_at < cutoff)
    if excess > 0:
        raise BudgetFull(f"the storage budget of {budget.max_bytes:,} bytes is full of snapshots within their "
                          f"retention ({budget.snapshot_retention.days} days)")
    return evicted


def _evict(db, model, columns, age, excess, condition):
    """Delete `model` rows oldest by `age` first (those meeting `condition`) until `excess` bytes went."""
    removed = 0
    while excess > 0:
        query = select(model.id, _size(columns)).order_by(age).limit(EVICT_BATCH)
        if condition is not None:
            query = query.where(condition)
        rows = db.execute(query).all()
        if not rows:
            break
        doomed = []
        for row_id, size in rows:
            if excess <= 0:
                break
            doomed.append(row_id)
            excess -= int(size or 0)
        with write_transaction(db):
            db.execute(delete(model).where(model.id.in_(doomed)))
        removed += len(doomed)
    return excess, removed
