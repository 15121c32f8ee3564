"""Shared fixtures: a fresh app on a temporary database, its test client, both databases, and Chromium launch flags.

`database_url` is a SQLite file unless a module asks for `each_database_url`: the store, session, snapshot and
rate-limit tests run on SQLite and on a throwaway PostgreSQL cluster (tests/postgres.py) alike.
"""
import gc
import os
import shutil

# One BLAS thread per test process: pytest-xdist already puts a process on every core, and BLAS threads on top only
# contend with it (set before numpy loads OpenBLAS; a value you export wins).
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import pytest  # noqa: E402
from sqlalchemy import create_engine  # noqa: E402

from app import create_app  # noqa: E402
from backend import driver  # noqa: E402
from backend.store.engine import make_engine  # noqa: E402
from backend.store.migrate import upgrade  # noqa: E402
from tests.concurrency import engine_taken  # noqa: E402
from tests.postgres import Unavailable, throwaway_cluster  # noqa: E402
from tests.settings import app_config  # noqa: E402

# The engine's deadline is wall-clock time (backend/driver): on a machine shared by the whole suite a test about
# what a run *contains* must not fail because a neighbour was busy. tests/driver keeps the real figure.
PRODUCTION_DEADLINE_S = driver.DEADLINE_S
TEST_DEADLINE_S = 60.0


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    """Every test has run and every fixture is torn down: collect the garbage once, then freeze what is left. pytest's
    unraisable-exception check collects five times more as the process ends (a worker's exit after its last test took
    1.0 s, 0.3 s now: each collection walks torch's and transformers' objects), to run finalizers and report what
    they raise; frozen, those collections walk only what the finalizers freed and made, which is all they can find
    after this one (not during the tests: test_torch_loop's profiler window is sensitive to which garbage is still
    alive when it opens)."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True, scope="session")
def _generous_engine_deadline():
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(driver, "DEADLINE_S", TEST_DEADLINE_S)
        yield


@pytest.fixture(scope="session")
def postgres_server():
    """The URL of this test process's own PostgreSQL database (one cluster per xdist worker)."""
    try:
        with throwaway_cluster() as url:
            yield url
    except Unavailable as reason:
        pytest.skip(str(reason))


@pytest.fixture
def empty_postgres(postgres_server):
    """The PostgreSQL database with nothing in it: the previous test's tables and open connections are gone."""
    engine = create_engine(postgres_server)
    with engine.begin() as connection:
        connection.exec_driver_sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                                   " WHERE datname = current_database() AND pid <> pg_backend_pid()")
        connection.exec_driver_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    engine.dispose()
    return postgres_server


@pytest.fixture
def sqlite_url(tmp_path):
    return f"sqlite:///{tmp_path / 'tapescope.sqlite'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def each_database_url(request):
    """A fresh, empty database of each kind the store supports."""
    return request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "empty_postgres")


@pytest.fixture(scope="session")
def _sqlite_at_head(tmp_path_factory):
    """An empty SQLite store migrated to head once per test process, for `database_url` to copy."""
    path = tmp_path_factory.mktemp("sqlite-at-head") / "tapescope.sqlite"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    engine.dispose()                 # the last connection checkpoints the WAL into the file
    return path


@pytest.fixture
def database_url(tmp_path, _sqlite_at_head):
    """The database a test's app uses: an empty SQLite store already at head, unless the module overrides this with
    `each_database_url` (an unmigrated SQLite file and PostgreSQL). A copy of `_sqlite_at_head`: create_app then only
    reads its revision, where migrating a new file loads and runs every Alembic script again (~20 ms an app, with
    hundreds of apps in the suite). The migrations themselves are tests/store's."""
    path = tmp_path / "tapescope.sqlite"
    shutil.copyfile(_sqlite_at_head, path)
    return f"sqlite:///{path}"


@pytest.fixture
def app(database_url):
    app = create_app(app_config(database_url))
    yield app


@pytest.fixture
def engine_held():
    """The engine taken by another request until the test ends."""
    with engine_taken():
        yield


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


# Debian's chromium-headless-shell: the same Blink and V8 as its chromium (one source package, one version), built as
# the headless-only shell Playwright itself drives in headless mode. Measured against chromium --headless opening the
# explorer in a kept tab, as tests/e2e does: the browser process's CPU halves, 0.13 -> 0.07 CPU-s an open, and a whole
# open costs 16-20% less CPU; tests/e2e with -n 2, 214 -> 203 s.
CHROMIUM = "/usr/bin/chromium-headless-shell"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]


@pytest.fixture(scope="session")
def fsdp_ranks_run(tmp_path_factory):
    """(path of run.json, its object) of examples/torch/gpt_fsdp.py on 2 gloo ranks, recorded once per test process:
    the modules that read it share the xdist group FSDP_RANKS_GROUP, so the suite records it once (about 9 s)."""
    from tests.many_ranks import record_ranks
    return record_ranks(tmp_path_factory.mktemp("fsdp-ranks"))


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Debian's headless Chromium, never a downloaded browser."""
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}
