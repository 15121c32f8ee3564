"""Store fixtures: a migrated engine on each database the store supports (a SQLite file, a throwaway PostgreSQL)."""
import pytest

from backend.store.engine import make_engine
from backend.store.migrate import upgrade


@pytest.fixture
def db_url(each_database_url):
    return each_database_url


@pytest.fixture
def engine(db_url):
    engine = make_engine(db_url)
    upgrade(engine)
    yield engine
    engine.dispose()
