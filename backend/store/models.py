"""The stored tables: a user's workspace session, an immutable shared snapshot, and the rate limiter's counters
(SQLAlchemy 2.0 ORM)."""
from datetime import datetime, timezone

from sqlalchemy import DateTime, Float, Integer, LargeBinary, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class UTCDateTime(TypeDecorator):
    """A timestamp that always comes back timezone-aware in UTC; SQLite would otherwise hand back a naive one."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        return None if value is None else value.astimezone(timezone.utc)

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


class Base(DeclarativeBase):
    pass


class UserSession(Base):
    """One browser's workspace: the spec being edited, its checkpoint policy, the view, the undo/redo history,
    where the model came from (origin) and the pinned baseline (a spec, never a trace).

    Named UserSession, not Session, so it never shadows SQLAlchemy's own Session in a reader's head.
    The id is a random secret that only lives inside the browser's signed cookie.
    JSON columns are stored as text we serialise ourselves, so what comes back is byte-for-byte what went in.
    """

    __tablename__ = "sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    spec_json: Mapped[str] = mapped_column(Text, default="null")
    checkpoint_json: Mapped[str] = mapped_column(Text, default="null")
    view_json: Mapped[str] = mapped_column(Text)
    history_json: Mapped[str] = mapped_column(Text)
    origin_json: Mapped[str] = mapped_column(Text, default="null", server_default="null")
    baseline_json: Mapped[str] = mapped_column(Text, default="null", server_default="null")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now, index=True)


class Snapshot(Base):
    """A shared link's frozen state: the spec, the trace document it produced, and where the viewer stood.

    Rows are written once and never updated; the trace is stored rather than recomputed so a link shows
    exactly what its author saw even after the engine changes (engine_version records which one ran).
    It is stored xz-compressed (jsontext.compress): a trace's JSON repeats itself, and 28.5 MiB become 1.2 MiB.
    """

    __tablename__ = "snapshots"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    spec_json: Mapped[str] = mapped_column(Text)
    checkpoint_json: Mapped[str] = mapped_column(Text, default="null")
    view_json: Mapped[str] = mapped_column(Text)
    trace_xz: Mapped[bytes] = mapped_column(LargeBinary)
    schema_version: Mapped[str] = mapped_column(String(32))
    engine_version: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)
    title: Mapped[str | None] = mapped_column(String(120), nullable=True)
    # sha256 of everything the row holds: an identical snapshot is stored once (null on rows from before 0005)
    content_hash: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)


class RateLimitCounter(Base):
    """One fixed-window counter of the rate limiter: a client's hits on one limit, and when the window ends.

    Kept in the app's database so that every gunicorn worker, and every server on one database, counts together.
    """

    __tablename__ = "rate_limits"

    bucket: Mapped[str] = mapped_column(String(255), primary_key=True)
    hits: Mapped[int] = mapped_column(Integer)
    expires_at: Mapped[float] = mapped_column(Float, index=True)  # Unix seconds
