"""Store fixtures: a migrated engine on a real SQLite file under tmp_path."""
import pytest

from backend.store.engine import make_engine
from backend.store.migrate import upgrade


@pytest.fixture
def db_url(tmp_path):
    return f"sqlite:///{tmp_path / 'store.sqlite'}"


@pytest.fixture
def engine(db_url):
    engine = make_engine(db_url)
    upgrade(engine)
    yield engine
    engine.dispose()
