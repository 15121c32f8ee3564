"""Browser-test fixtures: `live_server`, a real Tapescope on 127.0.0.1 (an ephemeral port) for the whole session."""
import pytest
from playwright.sync_api import expect

from app import create_app
from tests.live import serving
from tests.settings import app_config


# The suite runs on every core at once (pytest-xdist): a page waits on a server that may be tracing for another test
# of the same worker, and shares two cores with other workers' browsers. What a test waits for is an outcome, so
# waiting longer never lets a wrong answer through; it only stops a busy machine from failing a right one.
BUSY_MACHINE_TIMEOUT_MS = 30_000
expect.set_options(timeout=BUSY_MACHINE_TIMEOUT_MS)


@pytest.fixture(autouse=True)
def _patient_page(request):
    """Every browser test's page waits as long as expect() does (Playwright's default is 30 s for actions already)."""
    if "page" in request.fixturenames:
        request.getfixturevalue("page").set_default_timeout(BUSY_MACHINE_TIMEOUT_MS)


@pytest.fixture(scope="session")
def live_database_url(tmp_path_factory):
    """The live server's database, for tests that put a row there as an older server would have."""
    return f"sqlite:///{tmp_path_factory.mktemp('live_server') / 'tapescope.sqlite'}"


@pytest.fixture(scope="session")
def live_server(live_database_url):
    """The base URL (no trailing slash) of create_app() served by werkzeug in a background thread."""
    # One server for every page and the tests' own API calls: a request waits its turn on the engine rather than
    # meeting a 503 from a page still tracing (the busy answer itself is tested in tests/driver).
    app = create_app(app_config(live_database_url, ENGINE_WAIT_S=120.0, ENGINE_DEADLINE_S=60.0))
    with serving(app) as url:
        yield url
