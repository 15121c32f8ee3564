"""The rate limiter's counters in the app's own database: Flask-Limiter storage under the "tapescope-db" scheme.

Every gunicorn worker, and every server on one database, then counts a client's writes together, with no
Redis to run. One counter per (client, limit) bucket, a fixed window: a single upsert per hit resets an expired
window or adds to the live one, atomically on SQLite and PostgreSQL alike. Expired rows are deleted by `prune`.
"""
import time

from limits.storage import Storage
from sqlalchemy import Engine, delete, select, text
from sqlalchemy.exc import SQLAlchemyError

from backend.store.models import RateLimitCounter

STORAGE_URI = "tapescope-db://"

# Both SQLite (3.35+) and PostgreSQL take this upsert; SET reads the row as it was before the statement.
_HIT = text("""
INSERT INTO rate_limits (bucket, hits, expires_at) VALUES (:bucket, :amount, :now + :expiry)
ON CONFLICT (bucket) DO UPDATE SET
  hits = CASE WHEN rate_limits.expires_at <= :now THEN :amount ELSE rate_limits.hits + :amount END,
  expires_at = CASE WHEN rate_limits.expires_at <= :now THEN :now + :expiry ELSE rate_limits.expires_at END
RETURNING hits
""")


class DatabaseStorage(Storage):
    """limits' Storage for the fixed-window strategy, on a SQLAlchemy engine passed as storage option `engine`."""

    STORAGE_SCHEME = ["tapescope-db"]

    def __init__(self, uri: str | None = None, wrap_exceptions: bool = False, engine: Engine | None = None,
                 **options):
        if engine is None:
            raise ValueError("DatabaseStorage needs the app's engine: storage_options={'engine': engine}")
        super().__init__(uri, wrap_exceptions=wrap_exceptions, **options)
        self.engine = engine

    @property
    def base_exceptions(self):
        return SQLAlchemyError

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        with self.engine.begin() as connection:
            return connection.execute(_HIT, {"bucket": key, "amount": amount, "now": time.time(),
                                             "expiry": expiry}).scalar_one()

    def get(self, key: str) -> int:
        with self.engine.connect() as connection:
            hits = connection.execute(select(RateLimitCounter.hits).where(
                RateLimitCounter.bucket == key, RateLimitCounter.expires_at > time.time())).scalar()
        return hits or 0

    def get_expiry(self, key: str) -> float:
        with self.engine.connect() as connection:
            expires_at = connection.execute(select(RateLimitCounter.expires_at).where(
                RateLimitCounter.bucket == key)).scalar()
        return expires_at if expires_at is not None and expires_at > time.time() else time.time()

    def check(self) -> bool:
        try:
            with self.engine.connect() as connection:
                connection.execute(select(1))
            return True
        except SQLAlchemyError:
            return False

    def reset(self) -> int | None:
        with self.engine.begin() as connection:
            return connection.execute(delete(RateLimitCounter)).rowcount

    def clear(self, key: str) -> None:
        with self.engine.begin() as connection:
            connection.execute(delete(RateLimitCounter).where(RateLimitCounter.bucket == key))


def prune(engine: Engine, now: float | None = None) -> int:
    """Delete the counters whose window has ended; returns how many went."""
    with engine.begin() as connection:
        return connection.execute(delete(RateLimitCounter).where(
            RateLimitCounter.expires_at <= (time.time() if now is None else now))).rowcount
