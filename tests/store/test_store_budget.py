"""The storage budget: idle workspaces go first (never the one being written), then snapshots past retention,
oldest first; snapshots within retention are never dropped (a full budget refuses the write); an identical
snapshot is stored once. On SQLite and PostgreSQL."""
import os
from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session

from backend.store import sessions, snapshots
from backend.store.budget import Budget, BudgetFull, make_room, stored_bytes
from backend.store.engine import write_transaction
from backend.store.models import Snapshot, UserSession, utc_now

DOCUMENT = {"spec": {"blob": "x" * 4000}, "checkpoint": None, "view": {"step": 0, "selected": None, "zoom": None},
            "history": {"undo": [], "redo": []}, "origin": None, "baseline": None}
YEAR = timedelta(days=365)


def _workspaces(db, n):
    made = []
    for age in range(n):
        workspace = sessions.create(db)
        sessions.save(db, workspace.id, DOCUMENT)
        with write_transaction(db):
            db.execute(update(UserSession).where(UserSession.id == workspace.id)
                       .values(updated_at=utc_now() - timedelta(hours=n - age)))      # the first made is idlest
        made.append(workspace.id)
    return made


def _alive(db, model, ids):
    return [i for i in ids if db.get(model, i) is not None]


def test_the_idlest_workspaces_go_first_and_never_the_one_being_written(engine):
    with Session(engine) as db:
        ids = _workspaces(db, 6)
        total = stored_bytes(db)
        budget = Budget(max_bytes=total - 1, snapshot_retention=YEAR)     # one byte short: one must go
        evicted = make_room(db, 0, budget, keep_session=ids[0])
        db.expire_all()
        assert evicted == {"sessions": 1, "snapshots": 0}
        assert _alive(db, UserSession, ids) == [ids[0], *ids[2:]]          # the idlest but the kept one
        assert stored_bytes(db) <= budget.max_bytes


def test_snapshots_past_retention_go_after_workspaces_and_those_within_are_kept(engine):
    with Session(engine) as db:
        workspaces = _workspaces(db, 2)
        old, new = (snapshots.create(db, spec={"n": i}, checkpoint=None, view={"step": 0},
                                     trace={"schema_version": 2, "blob": os.urandom(3000).hex()}) for i in range(2))   # xz keeps 6 KB
        with write_transaction(db):
            db.execute(update(Snapshot).where(Snapshot.id == old).values(created_at=utc_now() - 2 * YEAR))
        budget = Budget(max_bytes=stored_bytes(db) - 1, snapshot_retention=YEAR)
        evicted = make_room(db, 9000, budget)       # more than both workspaces (~8.2 KB): the old snapshot too
        db.expire_all()
        assert evicted == {"sessions": 2, "snapshots": 1}
        assert _alive(db, UserSession, workspaces) == [] and _alive(db, Snapshot, [old, new]) == [new]
        with pytest.raises(BudgetFull):                         # only a snapshot within retention is left
            make_room(db, 10 ** 9, budget)
        db.expire_all()
        assert _alive(db, Snapshot, [new]) == [new]


def test_an_identical_snapshot_is_stored_once(engine):
    with Session(engine) as db:
        made = [snapshots.create(db, spec={"n": 1}, checkpoint=None, view={"step": 3}, trace={"schema_version": 2},
                                 title="same") for _ in range(3)]
        other = snapshots.create(db, spec={"n": 1}, checkpoint=None, view={"step": 4}, trace={"schema_version": 2},
                                 title="same")
        assert len(set(made)) == 1 and other != made[0]
        assert db.query(Snapshot).count() == 2
