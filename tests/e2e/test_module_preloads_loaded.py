"""The preload list against the oracle that matters: the modules a real Chromium imports when the page loads.

The page is loaded once with its `<link rel="modulepreload">` tags stripped, so the browser finds every module by
following the imports itself; the window's resource timing then lists what it fetched (a dedicated worker's fetches
are in the worker's own timeline, not the window's). That set must be exactly the list the server preloads: a module
missed (say, one moved into a folder the preload parser does not follow) costs a round trip per import depth at
start, and a preload nobody imports is a wasted download.
"""
import re
from pathlib import Path
from urllib.parse import urlparse

STATIC_JS = Path(__file__).resolve().parents[2] / "static" / "js"
PRELOAD = re.compile(r'<link rel="modulepreload" href="([^"]+)">')

IMPORTED = """() => performance.getEntriesByType('resource').map((entry) => new URL(entry.name).pathname)
                 .filter((path) => path.startsWith('/static/js/'))"""


def classic_worker_scripts():
    """The layout worker (`new Worker(...)`, not a module) and the scripts it pulls in with importScripts: fetched
    for the worker, not imported by the page, and Chromium lists them in the window's timeline all the same."""
    worker = STATIC_JS / "views" / "graph" / "layout-worker.js"
    pulled = re.findall(r'"(/static/js/[^"]+\.js)"', re.search(r"importScripts\(([^)]*)\)", worker.read_text())[1])
    return {"/static/js/views/graph/layout-worker.js", *pulled}


def test_every_module_the_browser_imports_is_preloaded_and_every_preload_is_imported(page, live_server):
    html = page.request.get(f"{live_server}/").text()
    preloaded = {urlparse(href).path for href in PRELOAD.findall(html)}

    def without_preloads(route):
        response = route.fetch()
        route.fulfill(response=response, body=PRELOAD.sub("", response.text()))

    page.route(f"{live_server}/", without_preloads)
    page.goto(f"{live_server}/")
    page.wait_for_selector(".explorer[data-ready=true]")
    page.wait_for_load_state("networkidle")
    imported = set(page.evaluate(IMPORTED)) - classic_worker_scripts()
    assert len(imported) > 40, imported
    assert imported - preloaded == set(), "imported by the page but not preloaded"
    assert preloaded - imported == set(), "preloaded but never imported"
