"""Random, unguessable ids for snapshots and sessions, and the strict shape check run before any query."""
import re
import secrets

SNAPSHOT_ID_BYTES = 16  # 128 bits: a link cannot be guessed or enumerated
SESSION_ID_BYTES = 32

# token_urlsafe(16) is 22 characters; the upper bound leaves room to lengthen ids without breaking old links.
SNAPSHOT_ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{22,64}")


def new_snapshot_id() -> str:
    return secrets.token_urlsafe(SNAPSHOT_ID_BYTES)


def new_session_id() -> str:
    return secrets.token_urlsafe(SESSION_ID_BYTES)


def is_snapshot_id(candidate: object) -> bool:
    """True only for strings shaped like an id we issue; anything else never reaches the database."""
    return isinstance(candidate, str) and SNAPSHOT_ID_PATTERN.fullmatch(candidate) is not None
