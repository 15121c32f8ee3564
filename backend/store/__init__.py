"""Storage for sessions and snapshots: SQLAlchemy models, engine setup, migrations. The only code that touches the database."""
from backend.store.binding import close_store, current_db, init_store, prune_if_due, storage_budget

__all__ = ["init_store", "current_db", "close_store", "prune_if_due", "storage_budget"]
