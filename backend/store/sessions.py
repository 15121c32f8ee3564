"""Session rows: one browser's workspace (spec, checkpoint, view, undo/redo history, origin, baseline), by secret id.

A workspace's version is its updated_at timestamp (ISO text): a save may name the version it started from and
then only lands if nobody saved in between (a compare-and-set in the UPDATE's WHERE clause).
"""
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from backend.store import jsontext
from backend.store.engine import write_transaction
from backend.store.ids import new_session_id
from backend.store.models import UserSession, utc_now

EMPTY_VIEW = {"step": 0, "selected": None, "zoom": None}
EMPTY_HISTORY = {"undo": [], "redo": []}


@dataclass(frozen=True)
class Workspace:
    """What a session holds. `id` is the cookie secret: it is never put in a response body."""

    id: str
    spec: dict | None
    checkpoint: dict | None
    view: dict
    history: dict
    updated_at: datetime
    origin: dict | None = None
    baseline: dict | None = None

    @property
    def version(self) -> str:
        return self.updated_at.isoformat()

    def document(self) -> dict:
        return {"spec": self.spec, "checkpoint": self.checkpoint, "view": self.view, "history": self.history,
                "origin": self.origin, "baseline": self.baseline}


class StaleVersion(Exception):
    """A save named a version that is no longer current: someone (another tab) saved in between."""

    def __init__(self, current: Workspace):
        super().__init__("stale workspace version")
        self.current = current


def _workspace(row: UserSession) -> Workspace:
    return Workspace(id=row.id, updated_at=row.updated_at,
                     **jsontext.columns(row, "spec", "checkpoint", "view", "history", "origin", "baseline"))


def create(db: Session) -> Workspace:
    """A new, empty workspace under a fresh random id."""
    row = UserSession(
        id=new_session_id(),
        spec_json=jsontext.dump(None),
        checkpoint_json=jsontext.dump(None),
        view_json=jsontext.dump(EMPTY_VIEW),
        history_json=jsontext.dump(EMPTY_HISTORY),
    )
    with write_transaction(db):
        db.add(row)
    return _workspace(row)


def get(db: Session, session_id: str) -> Workspace | None:
    if not isinstance(session_id, str) or not session_id:
        return None
    row = db.scalars(select(UserSession).where(UserSession.id == session_id)).one_or_none()
    return None if row is None else _workspace(row)


def save(db: Session, session_id: str, document: dict, base_version: str | None = None) -> Workspace | None:
    """Replace the workspace's whole document; None when no such session exists (e.g. it was pruned).

    Without `base_version`, a single UPDATE is last-writer-wins, like any PUT. With it, the UPDATE only matches
    while the row is still at that version; otherwise StaleVersion carries the current workspace.
    """
    now = utc_now()
    condition = UserSession.id == session_id
    if base_version is not None:
        condition = condition & (UserSession.updated_at == _parse_version(base_version))
    with write_transaction(db):
        result = db.execute(
            update(UserSession)
            .where(condition)
            .values(
                spec_json=jsontext.dump(document["spec"]),
                checkpoint_json=jsontext.dump(document["checkpoint"]),
                view_json=jsontext.dump(document["view"]),
                history_json=jsontext.dump(document["history"]),
                origin_json=jsontext.dump(document.get("origin")),
                baseline_json=jsontext.dump(document.get("baseline")),
                updated_at=now,
            )
        )
    if result.rowcount == 0:
        current = get(db, session_id)
        if current is not None and base_version is not None:
            raise StaleVersion(current)
        return None
    return Workspace(id=session_id, spec=document["spec"], checkpoint=document["checkpoint"],
                     view=document["view"], history=document["history"], updated_at=now,
                     origin=document.get("origin"), baseline=document.get("baseline"))


def document_bytes(document: dict) -> int:
    """What a workspace document costs stored (its columns' JSON text), for the storage budget."""
    return sum(len(jsontext.dump(document.get(field))) for field in ("spec", "checkpoint", "view", "history",
                                                                        "origin", "baseline"))


def _parse_version(version: str) -> datetime | None:
    try:
        return datetime.fromisoformat(version)
    except ValueError:
        return None  # matches no row: a made-up version is simply stale


def prune(db: Session, not_used_since: datetime) -> int:
    """Delete sessions untouched since `not_used_since`; returns how many went."""
    with write_transaction(db):
        result = db.execute(delete(UserSession).where(UserSession.updated_at < not_used_since))
    return result.rowcount
