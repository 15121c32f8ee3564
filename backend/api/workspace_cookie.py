"""Binds a browser to its workspace: Flask's signed session cookie carries only the random session id.

The cookie is signed with SECRET_KEY, so a tampered cookie fails verification, reads as empty, and the
browser simply gets a fresh workspace. The id never appears in a URL or a response body.

A workspace row is made only by a write (PUT /api/session, a copy), never by a read: a browser that only
looks costs nothing, and one cookie holds one workspace. Each creation counts against its client's
"workspace_create" limit, so a client that drops its cookie every time cannot make rows without end.
"""
from flask import session as cookie

from backend.api.limits import count_workspace_creation
from backend.store import current_db, prune_if_due, storage_budget
from backend.store.budget import make_room
from backend.store import sessions as stored_sessions
from backend.store.sessions import EMPTY_VIEW, Workspace

COOKIE_FIELD = "workspace_id"


def current_workspace() -> Workspace | None:
    """This browser's workspace, or None when its cookie names none (no cookie, tampered, or pruned)."""
    session_id = cookie.get(COOKIE_FIELD)
    return stored_sessions.get(current_db(), session_id) if isinstance(session_id, str) else None


def _new_workspace() -> Workspace:
    count_workspace_creation()
    workspace = stored_sessions.create(current_db())
    cookie[COOKIE_FIELD] = workspace.id
    cookie.permanent = True  # survives a browser restart, for PERMANENT_SESSION_LIFETIME
    prune_if_due()
    return workspace


def save_workspace(document: dict, base_version: str | None = None,
                   workspace: Workspace | None = None, replace: bool = False) -> Workspace:
    """Replace this browser's workspace document, creating the workspace first if it has none (`workspace`, when
    the caller already read it, saves a second read).

    Raises stored_sessions.StaleVersion when another tab saved since `base_version`, and when a save names no
    version for a workspace that exists (two tabs opened before it did: the second must not overwrite the first),
    unless `replace` (a copy of a snapshot, which keeps the old document on its undo list). A save that grows the
    stored bytes makes room in the storage budget first (backend/store/budget.py): the longest idle workspaces go,
    never this one.
    """
    db = current_db()
    existing = workspace or current_workspace()
    if existing is None:  # the first save creates the row; a version from a pruned workspace is moot
        base_version = None
    elif base_version is None and not replace:
        raise stored_sessions.StaleVersion(existing)
    # Only a save that grows what is stored can pass the budget: the page's autosaves (a step, a selection) mostly
    # do not, and skip the count of every row that making room starts with.
    growth = stored_sessions.document_bytes(document) - (
        stored_sessions.document_bytes(existing.document()) if existing is not None else 0)
    if growth > 0:
        make_room(db, growth, storage_budget(), keep_session=existing.id if existing is not None else None)
    workspace = existing or _new_workspace()
    saved = stored_sessions.save(db, workspace.id, document, base_version)
    if saved is None:  # pruned between the read and the write: start again under a new id
        cookie.pop(COOKIE_FIELD, None)
        saved = stored_sessions.save(db, _new_workspace().id, document)
    return saved


def empty_response_body() -> dict:
    """What GET answers a browser with no workspace yet: the empty document, nothing stored."""
    return {"spec": None, "checkpoint": None, "view": dict(EMPTY_VIEW),
            "history": {"undo": [], "redo": []}, "origin": None, "baseline": None, "version": None,
            "updated_at": None}


def workspace_response_body(workspace: Workspace | None) -> dict:
    """The workspace as the API shows it; a browser without one sees the empty workspace (`version` null)."""
    if workspace is None:
        return empty_response_body()
    return {**workspace.document(), "version": workspace.version, "updated_at": workspace.updated_at.isoformat()}
