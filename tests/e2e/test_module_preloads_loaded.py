"""The preload list against the oracle that matters: the module scripts a real Chromium requests when the page loads.

A module the page imports but the list misses (say, one moved into a folder the preload parser does not follow) is a
round trip per import depth at start; a preload nobody imports is a wasted download. Both fail here.
"""
import re
from urllib.parse import urlparse


def test_every_module_the_browser_loads_is_preloaded_and_every_preload_is_loaded(page, live_server):
    requested = set()
    page.on("request", lambda request: requested.add(urlparse(request.url).path))
    page.goto(f"{live_server}/")
    page.wait_for_selector(".explorer[data-ready=true]")
    page.wait_for_load_state("networkidle")
    html = page.request.get(f"{live_server}/").text()
    preloaded = set(re.findall(r'<link rel="modulepreload" href="(/static/js/[^"]+\.js)">', html))
    # the layout worker runs in its own global scope and is started by URL, not imported by the page
    loaded = {path for path in requested if path.startswith("/static/js/") and not path.endswith("-worker.js")}
    assert len(loaded) > 40, loaded
    assert loaded - preloaded == set(), "imported by the page but not preloaded"
    assert preloaded - loaded == set(), "preloaded but never imported"
