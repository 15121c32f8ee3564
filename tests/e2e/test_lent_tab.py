"""The visitor tab the browser tests share (conftest.LentTab): what one test stores there, at any origin its frames
went to, is gone for the next one, so is the media it emulated, and a save the test's page still had pending is never
sent on its way out."""
import time

from tests.e2e.conftest import LentTab
from tests.e2e.explorer_helpers import open_explorer
from tests.live import requests_started

STORE_EVERYTHING = """async () => {
  localStorage.setItem("draft", "1");
  sessionStorage.setItem("tab", "1");
  document.cookie = "left=1; path=/";
  await new Promise((resolve, reject) => {
    const opened = indexedDB.open("left-behind", 1);
    opened.onupgradeneeded = () => opened.result.createObjectStore("runs");
    opened.onsuccess = () => {
      const write = opened.result.transaction("runs", "readwrite");
      write.objectStore("runs").put("a run", "key");
      write.oncomplete = () => { opened.result.close(); resolve(); };
    };
    opened.onerror = () => reject(opened.error);
  });
}"""

WHAT_IS_STORED = """async () => ({
  local: localStorage.length, session: sessionStorage.length, cookie: document.cookie,
  databases: (await indexedDB.databases()).map((d) => d.name),
})"""

NOTHING = {"local": 0, "session": 0, "cookie": "", "databases": []}


def test_what_a_test_stored_at_two_origins_is_gone_after_it_hands_the_tab_back(_visitor_context, _visitor_tab, live_server):
    other_origin = live_server.replace("127.0.0.1", "localhost")      # the same server under a second origin
    lent = LentTab(_visitor_context, _visitor_tab)
    for origin in (other_origin, live_server):                       # the tab ends at the second: the first is only "visited"
        _visitor_tab.goto(f"{origin}/favicon.ico")
        _visitor_tab.evaluate(STORE_EVERYTHING)
        assert _visitor_tab.evaluate(WHAT_IS_STORED) != NOTHING
    lent.hand_back()

    assert _visitor_tab.url == "about:blank" and _visitor_context.cookies() == []
    lent = LentTab(_visitor_context, _visitor_tab)
    try:
        for origin in (other_origin, live_server):
            _visitor_tab.goto(f"{origin}/favicon.ico")
            assert _visitor_tab.evaluate(WHAT_IS_STORED) == NOTHING, origin
    finally:
        lent.hand_back()


def test_a_save_pending_when_the_tab_is_handed_back_is_never_sent(_visitor_context, _visitor_tab, live_server):
    """Its answer would set the session cookie after the hand-back cleared it: the next test opened on this one's
    workspace (seen as another test's checkpoint policy, and its unfolded graph, in the next)."""
    lent = LentTab(_visitor_context, _visitor_tab)
    open_explorer(_visitor_tab, live_server, "seed-tape")
    _visitor_tab.evaluate("window.tapescope.setStep(2)")                # the workspace's first save
    _visitor_tab.wait_for_function("() => window.tapescope.saveState() === 'saved'", timeout=10000)
    _visitor_tab.evaluate("window.tapescope.setStep(3)")                # saved 0.6 s later, or on leaving the page
    assert _visitor_tab.evaluate("window.tapescope.saveState()") == "pending"
    asked = requests_started(live_server)
    lent.hand_back()
    time.sleep(1.0)                                                     # what a keepalive save would take, and more
    assert requests_started(live_server) == asked
    assert _visitor_context.cookies() == []


REDUCED_MOTION = "matchMedia('(prefers-reduced-motion: reduce)').matches"


def test_media_a_test_emulated_is_the_browsers_own_again_after_it_hands_the_tab_back(_visitor_context, _visitor_tab, live_server):
    lent = LentTab(_visitor_context, _visitor_tab)
    _visitor_tab.goto(f"{live_server}/favicon.ico")
    assert _visitor_tab.evaluate(REDUCED_MOTION) is False
    _visitor_tab.emulate_media(reduced_motion="reduce", color_scheme="dark")
    assert _visitor_tab.evaluate(REDUCED_MOTION) is True
    lent.hand_back()

    lent = LentTab(_visitor_context, _visitor_tab)
    try:
        _visitor_tab.goto(f"{live_server}/favicon.ico")
        assert _visitor_tab.evaluate(REDUCED_MOTION) is False
        assert _visitor_tab.evaluate("matchMedia('(prefers-color-scheme: dark)').matches") is False
    finally:
        lent.hand_back()
