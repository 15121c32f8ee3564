"""The preload lists against the oracle that matters: the modules a real Chromium requests when each page loads.

Each page is loaded with its `<link rel="modulepreload">` tags stripped, so the browser finds every module by
following the imports itself, and every request it makes for a script under js/ (in the page's asset version,
/assets/<version>/js/) is recorded. Those, less the
classic scripts (the page's own `<script src>` tags, the layout worker and what it pulls in with importScripts), must
be exactly the list the server preloads: a module missed (say, one in a folder the preload parser does not resolve)
costs a round trip per import depth at start, and a preload nobody imports is a wasted download.
"""
import re
from pathlib import Path
from urllib.parse import urlparse

import pytest

STATIC_JS = Path(__file__).resolve().parents[2] / "static" / "js"
PRELOAD = re.compile(r'<link rel="modulepreload" href="([^"]+)">')
CLASSIC_SCRIPT = re.compile(r'<script src="/assets/\w+/(js/[^"]+\.js)">')
ASSET = re.compile(r"^/assets/\w+/(.+)$")
PAGES = [("/", ".explorer[data-ready=true]"), ("/ledger", "body[data-ledger-ready=true]")]


def classic_worker_scripts():
    """The layout worker (`new Worker(...)`, not a module) and the scripts it pulls in with importScripts: fetched
    for the worker, not imported by the page, and Chromium reports their requests to the page all the same."""
    graph = STATIC_JS / "views" / "graph"
    worker = graph / re.search(r'new Worker\(new URL\("\./([^"]+\.js)", import\.meta\.url\)\)', (graph / "layout.js").read_text())[1]
    pulled = re.findall(r'"([^"]+\.js)"', re.search(r"importScripts\(([^)]*)\)", worker.read_text())[1])
    in_js = [(worker.parent / name).resolve().relative_to(STATIC_JS.parent).as_posix() for name in pulled]
    return {worker.relative_to(STATIC_JS.parent).as_posix(), *(path for path in in_js if path.startswith("js/"))}


@pytest.mark.parametrize(("path", "ready"), PAGES)
def test_every_module_the_browser_requests_is_preloaded_and_every_preload_is_requested(page, live_server, path, ready):
    html = page.request.get(f"{live_server}{path}").text()
    preloaded = {ASSET.match(urlparse(href).path)[1] for href in PRELOAD.findall(html)}
    classic = set(CLASSIC_SCRIPT.findall(html)) | classic_worker_scripts()

    def without_preloads(route):
        response = route.fetch()
        route.fulfill(response=response, body=PRELOAD.sub("", response.text()))

    requested = set()

    def record(request):
        asset = ASSET.match(urlparse(request.url).path)
        if request.resource_type == "script" and asset and asset[1].startswith("js/") and asset[1].endswith(".js"):
            requested.add(asset[1])

    page.on("request", record)
    page.route(f"{live_server}{path}", without_preloads)
    page.goto(f"{live_server}{path}")
    page.wait_for_selector(ready)
    page.wait_for_load_state("networkidle")
    imported = requested - classic
    assert len(imported) >= (40 if path == "/" else 3), imported
    assert imported - preloaded == set(), "requested by the page but not preloaded"
    assert preloaded - imported == set(), "preloaded but never requested"
