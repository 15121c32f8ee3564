"""Saving is never silent and never loses work: 30 fresh browsers behind one address each edit and reload and get
their edit back; a server that refuses saves (429) shows save-status failed with the reason, and a reload still
restores the edit from this browser's draft; two tabs opened before any workspace existed do not overwrite each
other (the second gets the conflict banner)."""
import pytest
from playwright.sync_api import expect

from app import create_app
from tests.e2e.test_workspace import edit, saved
from tests.live import serving
from tests.settings import app_config

VIEWPORT = {"width": 1280, "height": 800}


def _opened(page, base):
    page.goto(f"{base}/")
    page.wait_for_selector(".explorer[data-ready=true]")


def _batch(page):
    return page.evaluate("window.tapescope.getTrace().spec.batch")


def _server(tmp_path, name, **limits):
    """A server of its own with the shipped rate limits (the shared live server's are generous), some overridden."""
    app = create_app(app_config(f"sqlite:///{tmp_path / name}", RATE_LIMITS=limits,
                                ENGINE_WAIT_S=120.0, ENGINE_DEADLINE_S=60.0))
    return serving(app)


@pytest.fixture
def shipped_server(tmp_path):
    with _server(tmp_path, "shipped.sqlite") as url:
        yield url


@pytest.fixture
def refusing_server(tmp_path):
    """A server that takes one workspace save a day per address: the second is a 429 with Retry-After."""
    with _server(tmp_path, "refusing.sqlite", session_write="1 per day") as url:
        yield url


def _edit_save_reload(page, base, batch):
    """A browser's whole round: open the page, edit the batch, wait for the save, reload; the batch it came back with."""
    _opened(page, base)
    edit(page, "batch", batch, f"t.spec.batch === {batch}")
    saved(page)
    expect(page.get_by_test_id("save-status")).to_have_attribute("data-state", "saved")
    page.reload()
    page.wait_for_selector(".explorer[data-ready=true]")
    return _batch(page)


def test_thirty_fresh_browsers_from_one_address_each_get_their_edit_back(browser, shipped_server):
    """A class behind one NAT: one address, 30 browsers, each with its own cookie jar. The first and the last go
    through the page; the 28 between send what the first browser's page sent (its first save, with their own batch)
    from their own cookie jars and read their workspace back, so the address's limits meet 30 workspaces without 56
    more page loads (the page's save-and-restore is what the first and the last show)."""
    first_save = []
    restored = []
    for n in range(30):
        context = browser.new_context(viewport=VIEWPORT)
        try:
            if n in (0, 29):
                page = context.new_page()
                if n == 0:
                    page.on("request", lambda r: first_save.append(r.post_data_json) if r.url.endswith("/api/session")
                            and r.method == "PUT" else None)
                restored.append(_edit_save_reload(page, shipped_server, 10 + n))
                continue
            document = {**first_save[0], "version": None}
            document["spec"] = {**document["spec"], "batch": 10 + n}
            put = context.request.put(f"{shipped_server}/api/session", data=document)
            assert put.ok, (n, put.status, put.text())
            restored.append(context.request.get(f"{shipped_server}/api/session").json()["spec"]["batch"])
        finally:
            context.close()
    assert restored == [10 + n for n in range(30)]


def test_a_refused_save_says_so_and_a_reload_restores_the_edit(browser, refusing_server):
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        _opened(page, refusing_server)
        edit(page, "batch", 40, "t.spec.batch === 40")
        saved(page)                                         # the day's one save
        statuses = []
        page.on("response", lambda r: statuses.append(r.status) if r.url.endswith("/api/session") and r.request.method == "PUT" else None)
        edit(page, "batch", 41, "t.spec.batch === 41")
        status = page.get_by_test_id("save-status")
        expect(status).to_have_attribute("data-state", "failed")
        expect(status).to_contain_text("too many saves from your address. Kept in this browser")
        assert 429 in statuses
        page.screenshot(path="test-artifacts/save-status-failed.png")
        page.reload()
        page.wait_for_selector(".explorer[data-ready=true]")
        assert _batch(page) == 41                           # from the draft: the server still holds 40
        expect(page.get_by_test_id("save-status")).to_have_attribute("data-state", "failed")
    finally:
        context.close()


def test_two_tabs_opened_before_any_workspace_existed_do_not_overwrite_each_other(browser, live_server):
    context = browser.new_context(viewport=VIEWPORT)               # one browser: its tabs share the cookie
    try:
        first, second = context.new_page(), context.new_page()
        _opened(first, live_server)
        _opened(second, live_server)
        edit(first, "batch", 96, "t.spec.batch === 96")
        saved(first)
        edit(second, "batch", 48, "t.spec.batch === 48")
        banner = second.get_by_test_id("conflict-banner")
        expect(banner).to_be_visible()
        expect(second.get_by_test_id("save-status")).to_have_attribute("data-state", "failed")
        assert first.request.get(f"{live_server}/api/session").json()["spec"]["batch"] == 96
    finally:
        context.close()
