"""Browser-test fixtures: `live_server`, a real Tapescope on 127.0.0.1 (an ephemeral port) for the whole session, and
`page`: one browser tab per test process, handed to each test as a fresh visitor would have it.

Why one tab: a new tab starts a new renderer, which compiles the page's scripts again (Plotly, D3, 60 modules), about
0.6 s of a 1.1 s first visit on this machine; a tab that navigates on keeps V8's compiled code. Between tests the tab
forgets everything a visitor's browser would have kept: cookies (the session), local, session and IndexedDB storage
(drafts, an opened run.json), its routes, the listeners the test added, its viewport; and it leaves for about:blank,
so no script of the last test still runs.
A test about a fresh *browser* (a second tab, another visitor) opens its own context, as before."""
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from app import create_app
from tests.live import quiet, serving
from tests.settings import app_config


# The suite runs on every core at once (pytest-xdist): a page waits on a server that may be tracing for another test
# of the same worker, and shares two cores with other workers' browsers. What a test waits for is an outcome, so
# waiting longer never lets a wrong answer through; it only stops a busy machine from failing a right one.
BUSY_MACHINE_TIMEOUT_MS = 30_000
expect.set_options(timeout=BUSY_MACHINE_TIMEOUT_MS)


# page.wait_for_function polls on requestAnimationFrame unless told otherwise; in headless Chromium here a condition met
# right after a re-trace was seen 1.0 to 1.4 s late that way (rAF callbacks are held back while a worker lays out the
# graph) and 30 to 60 ms late polling every 50 ms (measured on grad-accumulation's every_k re-traces). A test that
# names its own polling keeps it.
WAIT_POLLING_MS = 50
_wait_for_function = Page.wait_for_function


def _wait_polling_every_50_ms(self, expression, *, arg=None, timeout=None, polling=None):
    return _wait_for_function(self, expression, arg=arg, timeout=timeout, polling=WAIT_POLLING_MS if polling is None else polling)


Page.wait_for_function = _wait_polling_every_50_ms


DEFAULT_VIEWPORT = {"width": 1280, "height": 720}     # Playwright's default, which a test may change for itself


@pytest.fixture(scope="session")
def _visitor_context(browser):
    context = browser.new_context(viewport=DEFAULT_VIEWPORT)
    yield context
    context.close()


@pytest.fixture(scope="session")
def _visitor_tab(_visitor_context):
    return _visitor_context.new_page()


@pytest.fixture
def page(_visitor_context, _visitor_tab):
    """The one tab, as a first-time visitor's: no cookie, nothing stored, default viewport, waits as long as expect()."""
    lent = LentTab(_visitor_context, _visitor_tab)
    try:
        yield _visitor_tab
    finally:
        lent.hand_back()


class LentTab:
    """The visitor tab lent to one test: it notes the origins the tab's frames go to and the listeners the test adds,
    and `hand_back()` leaves the tab as a first-time visitor's again."""

    def __init__(self, context, tab):
        self.context, self.tab = context, tab
        self.visited = set()      # the origins the tab's frames were at: the only ones that can have stored anything
        self.added = [("framenavigated", self._note_origin)]
        tab.on("framenavigated", self._note_origin)
        on = tab.on
        tab.on = lambda event, handler: (self.added.append((event, handler)), on(event, handler))[1]
        tab.set_default_timeout(BUSY_MACHINE_TIMEOUT_MS)

    def _note_origin(self, frame):
        self.visited.add(_origin_of(frame.url))

    def hand_back(self):
        """Forget cookies (the session), local, session and IndexedDB storage (drafts, an opened run.json), the
        test's routes and listeners, its viewport and emulated media; leave for about:blank, so no script of the test
        still runs."""
        tab = self.tab
        del tab.on
        for event, handler in self.added:
            tab.remove_listener(event, handler)
        tab.unroute_all(behavior="ignoreErrors")
        last = _origin_of(tab.url)
        if last:
            tab.evaluate("() => { try { sessionStorage.clear(); } catch {} }")    # the tab's own: CDP does not clear it
            # Leaving, the page's pagehide would send a pending save with keepalive (autosave.js), whose answer sets
            # the session cookie whenever the browser reads it, before the cookies below are cleared or after (the
            # next test then opened on this one's workspace: its policy, its unfolded graph). A route does not stop a
            # keepalive request (Playwright never sees it), so the page's fetch refuses from here on.
            tab.evaluate("() => { window.fetch = () => Promise.reject(new TypeError('the test is over')); }")
        tab.goto("about:blank")
        try:
            if last:
                quiet(last)               # a request of the test's own still being answered
        finally:                          # even when the wait fails, the next test meets a fresh visitor's tab
            self._forget_storage((self.visited | {last}) - {None})
            self.context.clear_cookies()
            tab.set_viewport_size(DEFAULT_VIEWPORT)
            tab.emulate_media(media="null", color_scheme="null", reduced_motion="null")

    def _forget_storage(self, origins):
        """Clear the storage of every origin the tab was at. Not context.storage_state() to find them: it opens a tab
        of its own to read local storage (~0.17 s a test: a renderer started and ended)."""
        cdp = self.context.new_cdp_session(self.tab)
        try:
            for origin in origins:
                cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
        finally:
            cdp.detach()


def _origin_of(url):
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") else None


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
