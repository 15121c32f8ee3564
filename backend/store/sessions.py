"""Session rows: one browser's workspace (spec, checkpoint, view, undo/redo history), found by its secret id."""
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

    def document(self) -> dict:
        return {"spec": self.spec, "checkpoint": self.checkpoint, "view": self.view, "history": self.history}


def _workspace(row: UserSession) -> Workspace:
    return Workspace(
        id=row.id,
        spec=jsontext.load(row.spec_json),
        checkpoint=jsontext.load(row.checkpoint_json),
        view=jsontext.load(row.view_json),
        history=jsontext.load(row.history_json),
        updated_at=row.updated_at,
    )


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


def save(db: Session, session_id: str, document: dict) -> Workspace | None:
    """Replace the workspace's whole document; None when no such session exists (e.g. it was pruned).

    A single UPDATE, no read first: two tabs saving at once resolve as last-writer-wins, like any PUT.
    """
    now = utc_now()
    with write_transaction(db):
        result = db.execute(
            update(UserSession)
            .where(UserSession.id == session_id)
            .values(
                spec_json=jsontext.dump(document["spec"]),
                checkpoint_json=jsontext.dump(document["checkpoint"]),
                view_json=jsontext.dump(document["view"]),
                history_json=jsontext.dump(document["history"]),
                updated_at=now,
            )
        )
    if result.rowcount == 0:
        return None
    return Workspace(id=session_id, spec=document["spec"], checkpoint=document["checkpoint"],
                     view=document["view"], history=document["history"], updated_at=now)


def prune(db: Session, not_used_since: datetime) -> int:
    """Delete sessions untouched since `not_used_since`; returns how many went."""
    with write_transaction(db):
        result = db.execute(delete(UserSession).where(UserSession.updated_at < not_used_since))
    return result.rowcount
