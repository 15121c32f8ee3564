"""The first screen orients a newcomer: a heading and one sentence on what the page shows and where to start, the
right panel titled by the phase it describes, the wheel and the keys said in words, and Share on the toolbar's
line at 1280 wide (it once wrapped alone on transformer-tiny)."""
import pytest
from playwright.sync_api import expect

from tests.e2e.explorer_helpers import go_to_step, open_explorer, trace_for


@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)], ids=["1280x800", "1920x1080"])
def test_the_first_screen_says_what_it_is_and_where_to_start(page, live_server, size):
    open_explorer(page, live_server, "transformer-tiny", size=size)
    expect(page.locator("h1")).to_have_text("The autograd tape, step by step")
    expect(page.get_by_test_id("intro")).to_contain_text("Pick a model, then press ▶ Play")
    expect(page.get_by_test_id("graph-hint")).to_contain_text("Ctrl/⌘ + wheel zooms (a plain wheel scrolls the page)")
    share, model = page.get_by_test_id("share").bounding_box(), page.get_by_test_id("preset").bounding_box()
    assert abs((share["y"] + share["height"] / 2) - (model["y"] + model["height"] / 2)) < 12, (share, model)


def test_the_right_panel_is_titled_by_the_phase_it_describes(page, live_server):
    trace = trace_for(page, live_server, "lab1-mlp")
    open_explorer(page, live_server, "lab1-mlp")
    title = page.get_by_test_id("sweep").locator("h2")
    expect(title).to_have_text("Forward: recording the tape")
    go_to_step(page, next(s["index"] for s in trace["steps"] if s["phase"] == "backward"))
    expect(title).to_have_text("Backward sweep")
    go_to_step(page, next(s["index"] for s in trace["steps"] if s["phase"] == "optimizer"))
    expect(title).to_have_text("Optimizer step")


def test_the_first_tab_reaches_a_skip_link_to_the_graph(page, live_server):
    open_explorer(page, live_server, "deep-mlp")
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("Tab")
    skip = page.get_by_test_id("skip-to-graph")
    expect(skip).to_be_focused()
    expect(skip).to_be_visible()
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("graph")).to_be_focused()           # the graph's own keys (f, + −) work from here
    assert "step=" in page.evaluate("location.hash")                 # the address's step is untouched
