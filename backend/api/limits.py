"""Per-client rate limits on every write, with Flask-Limiter, counted where every worker sees them.

The counters live in the app's own database (backend.store.ratelimits) unless RATELIMIT_STORAGE_URI names
another store (e.g. "redis://host:6379" for many servers without a shared database). The client is the
request's remote address: behind a reverse proxy set TAPESCOPE_PROXY_HOPS so that it is the real client's.
Limits are app config, RATE_LIMITS (merged over DEFAULT_RATE_LIMITS), in Flask-Limiter's notation; tests
raise them rather than switch them off, so the limiter runs in every test.
"""
import logging
import math
import time

from flask import Flask, current_app
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from limits import parse_many

from backend.api.errors import ApiError
from backend.store.binding import current_store
from backend.store.ratelimits import STORAGE_URI

log = logging.getLogger(__name__)
EXTENSION_KEY = "tapescope.limiter"

# Per client address. The bounds they put on disk are worked out in docs/storage.md ("How full it can get").
DEFAULT_RATE_LIMITS = {
    "session_write": "240 per minute",                 # PUT /api/session (the page autosaves ~0.6 s after a change)
    "snapshot_create": "10 per minute; 100 per day",   # POST /api/snapshots: runs the engine, stores ≤ 2 MiB
    "snapshot_copy": "30 per minute",                  # POST /api/snapshots/<id>/copy
    "trace_upload": "10 per minute; 100 per day",      # POST /api/traces: checks ≤ 4 MiB of JSON, stores ≤ 2 MiB
    # a write from a browser without a workspace yet: a class of 60 behind one address fits many times over; the
    # storage budget, not this, bounds the disk (backend/store/budget.py)
    "workspace_create": "600 per hour; 3000 per day",
}

ROUTE_LIMITS = {                                       # endpoint -> the limit its writes count against
    "sessions.replace_session": "session_write",
    "snapshots.create_snapshot": "snapshot_create",
    "snapshots.copy_snapshot": "snapshot_copy",
    "traces_api.post_trace": "trace_upload",
}


def rate_limits(app: Flask) -> dict:
    return {**DEFAULT_RATE_LIMITS, **app.config.get("RATE_LIMITS", {})}


def _checked(limits: dict) -> dict:
    """The limits, each parsed once at startup: a typo must stop the server, not silently limit nothing."""
    unknown = set(limits) - set(DEFAULT_RATE_LIMITS)
    if unknown:
        raise ValueError(f"RATE_LIMITS has unknown names {sorted(unknown)}; the names are {list(DEFAULT_RATE_LIMITS)}")
    for name, value in limits.items():
        try:
            if not parse_many(value):
                raise ValueError("no limit in it")
        except ValueError as error:
            raise ValueError(f"RATE_LIMITS[{name!r}] = {value!r} is not a limit like '10 per minute': {error}") from None
    return limits


def init_rate_limits(app: Flask) -> Limiter:
    """One Limiter per app (no module-level state), wrapped around the write endpoints already registered."""
    uri = app.config.setdefault("RATELIMIT_STORAGE_URI", STORAGE_URI)
    options = {"engine": current_store(app).engine} if uri == STORAGE_URI else {}
    app.config.setdefault("RATELIMIT_HEADERS_ENABLED", True)      # Retry-After on a 429
    app.config.setdefault("RATELIMIT_SWALLOW_ERRORS", True)       # a full or read-only database limits nothing
    limiter = Limiter(get_remote_address, app=app, storage_options=options, strategy="fixed-window")
    limits = _checked(rate_limits(app))
    for endpoint, name in ROUTE_LIMITS.items():
        view = app.view_functions[endpoint]
        app.view_functions[endpoint] = limiter.limit(limits[name], error_message=_sentence(limits[name]))(view)
    app.extensions[EXTENSION_KEY] = limiter
    return limiter


def _sentence(limit: str) -> str:
    return f"Too many writes from your address: the limit is {limit}. Wait a little and try again."


def count_workspace_creation() -> None:
    """Count a new workspace against its client's limit; ApiError 429 when over it.

    Called only when a write would create a workspace, so a browser with a cookie never counts here, and a
    client that drops its cookie on every request cannot make rows without end.
    """
    limiter = current_app.extensions.get(EXTENSION_KEY)
    if limiter is None or not limiter.enabled:
        return
    limit_text = rate_limits(current_app)["workspace_create"]
    client = get_remote_address()
    try:
        for item in parse_many(limit_text):
            if not limiter.limiter.hit(item, "workspace_create", client):
                reset_at, _ = limiter.limiter.get_window_stats(item, "workspace_create", client)
                wait_s = max(1, math.ceil(reset_at - time.time()))
                raise ApiError(429, f"Too many new workspaces from your address: the limit is {limit_text}. "
                                    "Keep the session cookie, or wait and try again.",
                               headers={"Retry-After": str(wait_s)})
    except ApiError:
        raise
    except Exception as error:  # the limiter's storage failed: as RATELIMIT_SWALLOW_ERRORS, let the write decide
        log.warning("Counting a workspace creation failed (%s); not limiting it", error)
