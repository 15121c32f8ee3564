"""axe-core in the browser on the explorer (two presets), a shared snapshot and the ledger: no serious or critical
violation. axe comes from the npm registry (package.json's devDependencies) and is evaluated from node_modules by the
test, so the app never serves test code."""
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.explorer_helpers import open_explorer, see_chart
from tests.e2e.test_workspace import api_post, preset_trace

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = ("serious", "critical")


def serious_violations(page):
    """axe's violations of impact serious or critical on the page as it is now, one line per rule."""
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run `make install` (npm ci installs axe-core, a devDependency)")
    page.evaluate(AXE.read_text())         # evaluated by the devtools protocol: the page's CSP refuses inline scripts
    result = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    return [f"{v['id']} ({v['impact']}): {v['help']}, at " + "; ".join(
                f"{node['target']} ({why(node)})" for node in v["nodes"])
            for v in result["violations"] if v["impact"] in BLOCKING]


def why(node):
    """axe's own sentence for one failing node (a contrast check names both colours and the ratio)."""
    checks = node["any"] + node["all"] + node["none"]
    return checks[0]["message"] if checks else node["failureSummary"]


def settle_explorer(page):
    """The explorer with every panel filled in: the charts drawn, and the panels that run when scrolled into view
    (the schedules, forward vs reverse mode) run to an answer, so their tables and buttons are scanned too."""
    see_chart(page, "memory-chart")
    see_chart(page, "lifetime-chart")
    page.get_by_test_id("modes-view").scroll_into_view_if_needed()
    expect(page.get_by_test_id("modes-view")).to_have_attribute("data-state", re.compile("ready|failed|stale"),
                                                                timeout=60_000)
    see_chart(page, "pareto-chart", timeout=60_000)
    page.evaluate("window.scrollTo(0, 0)")


@pytest.mark.parametrize("preset", ["seed-tape", "transformer-tiny"])
def test_the_explorer_has_no_serious_violations(page, live_server, preset):
    open_explorer(page, live_server, preset)
    settle_explorer(page)
    found = serious_violations(page)
    assert found == [], "\n".join(found)


def test_a_snapshot_page_has_no_serious_violations(page, live_server):
    trace = preset_trace(page, live_server, "deep-mlp")
    url = api_post(live_server, "/api/snapshots", {"spec": trace["spec"], "view": {"step": 3}})["url"]
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server}{url}")
    page.wait_for_selector(".explorer[data-ready=true]")
    settle_explorer(page)
    found = serious_violations(page)
    assert found == [], "\n".join(found)


def test_the_ledger_has_no_serious_violations(page, live_server):
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server}/ledger")
    expect(page.locator("body")).to_have_attribute("data-ledger-ready", "true")
    found = serious_violations(page)
    assert found == [], "\n".join(found)


def focused_test_id(page):
    return page.evaluate("document.activeElement?.dataset?.testid ?? document.activeElement?.tagName")


@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)], ids=["1280x800", "1920x1080"])
def test_the_keyboard_reaches_the_graph_by_a_skip_link_and_finds_before_it(page, live_server, size):
    open_explorer(page, live_server, "deep-mlp", size=size)
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("Tab")                                    # the first stop on the page is the skip link
    skip = page.get_by_test_id("skip-to-graph")
    expect(skip).to_be_focused()
    expect(skip).to_be_visible()
    expect(skip).to_have_text("Skip to the graph")
    box = skip.bounding_box()
    assert box["y"] >= 0 and box["width"] > 40, box                # shown on the screen while it has the focus
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("graph")).to_be_focused()

    # Tabbing forward from the search box reaches the graph after the panel's few tools (Fit, zoom): the box that
    # finds a node comes before the graph it zooms to, and back from the graph is never the page's other controls.
    page.get_by_test_id("graph-search").focus()
    stops = []
    for _ in range(8):
        page.keyboard.press("Tab")
        stops.append(focused_test_id(page))
        if stops[-1] == "graph":
            break
    assert stops[-1] == "graph", stops
    assert set(stops[:-1]) <= {"graph-unfold-all", "graph-fit", "graph-zoom-out", "graph-zoom-in", "graph-actual-size"}, stops
