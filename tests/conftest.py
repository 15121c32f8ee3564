"""Shared fixtures: a fresh app on a temporary instance folder, its test client, and Chromium launch flags."""
import pytest

from app import create_app
from backend import driver
from tests.settings import app_config

# The engine's deadline is wall-clock time (backend/driver): on a machine shared by the whole suite a test about
# what a run *contains* must not fail because a neighbour was busy. tests/driver keeps the real figure.
PRODUCTION_DEADLINE_S = driver.DEADLINE_S
TEST_DEADLINE_S = 60.0


@pytest.fixture(autouse=True, scope="session")
def _generous_engine_deadline():
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(driver, "DEADLINE_S", TEST_DEADLINE_S)
        yield


@pytest.fixture
def app(tmp_path):
    app = create_app(app_config(f"sqlite:///{tmp_path / 'tapescope.sqlite'}"))
    yield app


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Debian's chromium, never a downloaded browser."""
    return {**browser_type_launch_args, "executable_path": "/usr/bin/chromium", "args": CHROMIUM_ARGS}
