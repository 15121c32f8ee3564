"""Binds a browser to its workspace: Flask's signed session cookie carries only the random session id.

The cookie is signed with SECRET_KEY, so a tampered cookie fails verification, reads as empty, and the
browser simply gets a fresh workspace. The id never appears in a URL or a response body.
"""
from flask import session as cookie

from backend.store import current_db
from backend.store import sessions as stored_sessions
from backend.store.sessions import Workspace

COOKIE_FIELD = "workspace_id"


def current_workspace(create: bool = True) -> Workspace | None:
    """This browser's workspace; a new empty one (and a new cookie) when it has none and `create` is set."""
    db = current_db()
    session_id = cookie.get(COOKIE_FIELD)
    workspace = stored_sessions.get(db, session_id) if isinstance(session_id, str) else None
    if workspace is None and create:
        workspace = stored_sessions.create(db)
        cookie[COOKIE_FIELD] = workspace.id
        cookie.permanent = True  # survives a browser restart, for PERMANENT_SESSION_LIFETIME
    return workspace


def save_workspace(document: dict, base_version: str | None = None) -> Workspace:
    """Replace this browser's workspace document, creating the workspace first if it has none.

    With `base_version`, raises stored_sessions.StaleVersion when another tab saved since that version.
    """
    db = current_db()
    existing = current_workspace(create=False)
    if existing is None:  # the first save creates the row; a version from a pruned workspace is moot
        base_version = None
    workspace = existing or current_workspace(create=True)
    saved = stored_sessions.save(db, workspace.id, document, base_version)
    if saved is None:  # pruned between the read and the write: start again under a new id
        cookie.pop(COOKIE_FIELD, None)
        saved = stored_sessions.save(db, current_workspace(create=True).id, document)
    return saved


def empty_response_body() -> dict:
    """What GET answers a browser with no workspace yet: the empty document, nothing stored."""
    return {"spec": None, "checkpoint": None, "view": dict(stored_sessions.EMPTY_VIEW),
            "history": {"undo": [], "redo": []}, "origin": None, "baseline": None, "version": None,
            "updated_at": None}


def workspace_response_body(workspace: Workspace) -> dict:
    return {**workspace.document(), "version": workspace.version, "updated_at": workspace.updated_at.isoformat()}
