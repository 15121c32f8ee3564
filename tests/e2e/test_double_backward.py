"""Double backward in a real browser: the gradient-penalty preset draws the recorded backward as a second tape (its
own group), stepping into backward-2 lights exactly the recorded backward ops, the memory chart draws the bytes
saved for backward-2, and the peak explanation attributes them."""
from pathlib import Path

from playwright.sync_api import expect

from tests.e2e.explorer_helpers import go_to_step, open_explorer, see_chart, shown_trace, unfold_all

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
PRESET = "gradient-penalty"


def lit_entries(page):
    return set(page.eval_on_selector_all("[data-testid=graph] .node.op.recorded-backward",
                                         "nodes => nodes.map(n => Number(n.dataset.nodeId))"))


def test_stepping_into_backward_2_highlights_the_recorded_backward_ops(page, live_server):
    open_explorer(page, live_server, PRESET)
    unfold_all(page)
    trace = shown_trace(page)
    recorded = {e["index"] for e in trace["tape"] if e.get("recorded_in") == "backward"}
    assert recorded
    # the second tape is drawn as its own group
    expect(page.locator("[data-testid=graph] .group-frame[data-group-id='backward (recorded)']")).to_have_count(1)
    phases = [s["phase"] for s in trace["steps"]]
    first_backward = phases.index("backward")
    second = phases.index("backward-2")

    go_to_step(page, first_backward + 1)            # the first backward: recording, nothing lit yet
    assert lit_entries(page) == set()
    go_to_step(page, second)                        # into backward-2
    assert lit_entries(page) == recorded
    sweeping = next(s for s in trace["steps"][second:]
                    if s["phase"] == "backward-2" and trace["tape"][s["entry"]].get("recorded_in") == "backward")
    go_to_step(page, sweeping["index"])             # backward-2 running a vjp of the second tape
    current = page.eval_on_selector_all("[data-testid=graph] .node.current.recorded-backward",
                                        "nodes => nodes.map(n => n.dataset.nodeId)")
    assert current == [str(sweeping["entry"])]
    assert lit_entries(page) == recorded

    last = len(trace["steps"]) - 1
    go_to_step(page, last)                          # the optimizer: backward-2 is over
    assert lit_entries(page) == set()


def test_the_memory_chart_and_the_peak_explanation_show_what_is_saved_for_backward_2(page, live_server):
    open_explorer(page, live_server, PRESET)
    trace = shown_trace(page)
    see_chart(page, "memory-chart")
    series = page.evaluate("""() => document.querySelector('[data-testid=memory-chart]').data
        .filter(d => d.name === 'saved for backward-2').map(d => d.y)""")
    assert series == [[s["recorded_backward_bytes"] for s in trace["steps"]]]
    peak = trace["summary"]["peak_step"]
    go_to_step(page, peak)
    expect(page.get_by_test_id("explainer-recorded")).to_have_attribute(
        "data-bytes", str(trace["steps"][peak]["recorded_backward_bytes"]))
    expect(page.get_by_test_id("peak-verdict")).to_contain_text("the first backward's intermediates saved for the second")
    expect(page.locator("[data-testid=peak-breakdown] .group-name").first).to_contain_text("backward (recorded)")
    ARTIFACTS.mkdir(exist_ok=True)
    for width, height in ((1280, 800), (1920, 1080)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(ARTIFACTS / f"double-backward-{width}.png"))
