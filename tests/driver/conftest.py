"""The driver's own tests see the production deadline (the suite-wide conftest lends every other test a longer one)."""
import pytest

from backend import driver
from tests.conftest import PRODUCTION_DEADLINE_S


@pytest.fixture(autouse=True)
def _production_deadline(monkeypatch):
    monkeypatch.setattr(driver, "DEADLINE_S", PRODUCTION_DEADLINE_S)
