"""The explorer's graph and memory axis, as a person sees them: on small graphs the current node is in the graph panel
at every step (the view pans to it; nothing it shows is cut off beside the editor), and the memory chart counts bytes
in binary units like the header; the editor folds into a rail and the graph takes its width."""
import re

import pytest
from playwright.sync_api import expect

from tests.e2e.explorer_helpers import open_explorer, see_chart, trace_for

INSIDE = """() => {
  const box = document.querySelector('[data-testid=graph]').getBoundingClientRect();
  return Array.from(document.querySelectorAll('[data-testid=graph] .node.current'), (node) => {
    const r = node.getBoundingClientRect();
    return r.left >= box.left - 1 && r.right <= box.right + 1 && r.top >= box.top - 1 && r.bottom <= box.bottom + 1;
  });
}"""

INSIDE_ALL = """() => {
  const box = document.querySelector('[data-testid=graph]').getBoundingClientRect();
  return Array.from(document.querySelectorAll('[data-testid=graph] .node'), (node) => node.getBoundingClientRect())
    .every((r) => r.left >= box.left - 1 && r.right <= box.right + 1 && r.top >= box.top - 1 && r.bottom <= box.bottom + 1);
}"""


@pytest.mark.parametrize("preset_id", ["seed-tape", "lab1-mlp", "residual-unit"])
def test_on_small_graphs_the_current_node_is_in_the_panel_at_every_step(page, live_server, preset_id):
    trace = trace_for(page, live_server, preset_id)
    assert len(trace["graph"]["nodes"]) + len(trace["graph"]["leaves"]) <= 60
    open_explorer(page, live_server, preset_id)
    for step in range(len(trace["steps"])):
        page.evaluate("s => window.tapescope.setStep(s)", step)
        page.wait_for_function("() => !document.querySelector('[data-testid=graph]').dataset.panning")
        inside = page.evaluate(INSIDE)
        if trace["steps"][step]["phase"] != "optimizer":
            assert inside and all(inside), f"{preset_id}: the current node is outside the graph panel at step {step}"


def test_the_memory_axis_counts_binary_bytes(page, live_server):
    open_explorer(page, live_server, "deep-mlp")
    see_chart(page, "memory-chart")
    ticks = page.eval_on_selector_all("[data-testid=memory-chart] .ytick text", "ts => ts.map(t => t.textContent)")
    assert ticks and ticks[0] == "0"
    assert all(re.fullmatch(r"[\d.]+ (B|KiB|MiB|GiB)", t) for t in ticks[1:]), ticks
    assert not any(re.search(r"\d(k|M)B", t) for t in ticks), ticks


def test_at_1280_by_800_the_graph_is_the_biggest_panel_and_the_checkpoint_policy_is_in_view(page, live_server):
    open_explorer(page, live_server, "transformer-tiny")
    area = lambda selector: (lambda b: b["width"] * b["height"])(page.locator(selector).bounding_box())  # noqa: E731
    assert area("[data-testid=graph]") > max(area("#editor-panel"), area(".side"))
    policy = page.get_by_test_id("checkpoint-policy").bounding_box()
    panel = page.locator("#editor-panel").bounding_box()
    assert page.evaluate("document.getElementById('editor-panel').scrollTop") == 0
    assert policy["y"] + policy["height"] <= min(800, panel["y"] + panel["height"]), "the checkpoint policy is below the fold"


def test_the_lifetime_chart_names_every_tensor_and_has_a_legend(page, live_server):
    trace = trace_for(page, live_server, "transformer-tiny")
    open_explorer(page, live_server, "transformer-tiny")
    saved = [t for t in trace["tensors"] if t["saved_by"]]
    assert len(saved) > 40
    ticks = "[data-testid=lifetime-chart] .ytick text"
    see_chart(page, "lifetime-chart")
    names = page.eval_on_selector_all(ticks, "ts => ts.map(t => t.textContent.trim())")
    params = [t for t in saved if t["kind"] == "param"]
    # The parameters are one resident band; the activations sit under their scopes' header rows, each named.
    assert names[0] == f"▸ parameters (resident) · {len(params)}"
    assert [n for n in names if n[0] not in "▸▾"] == [t["name"] for t in saved if t["kind"] != "param"]
    page.evaluate("id => window.tapescope.select(id)", f"t{params[0]['id']}")   # a selection opens the band
    page.wait_for_function("n => document.querySelectorAll('[data-testid=lifetime-chart] .ytick text').length === n",
                           arg=len(names) + len(params))
    opened = page.eval_on_selector_all(ticks, "ts => ts.map(t => t.textContent.trim())")
    assert opened[0].startswith("▾ parameters (resident)") and opened[1:1 + len(params)] == [t["name"] for t in params]
    legend = page.get_by_test_id("lifetime-legend").inner_text()
    assert "activation" in legend and "parameter" in legend


def test_the_editor_folds_into_a_rail_and_the_graph_takes_its_width(page, live_server):
    open_explorer(page, live_server, "transformer-tiny")
    graph = page.get_by_test_id("graph")
    before = {"width": graph.bounding_box()["width"], "scale": graph.get_attribute("data-scale")}
    page.get_by_test_id("editor-fold").click()
    expect(page.get_by_test_id("checkpoint-policy")).to_be_hidden()
    rail = page.get_by_test_id("editor-unfold")
    expect(rail).to_be_visible()
    assert rail.bounding_box()["width"] < 40
    page.wait_for_function("w => document.querySelector('[data-testid=graph]').getBoundingClientRect().width > w + 250",
                           arg=before["width"])
    # A view nobody moved since fit is fitted again for the wider panel: still whole, now larger.
    page.wait_for_function("s => document.querySelector('[data-testid=graph]').dataset.scale !== s", arg=before["scale"])
    assert page.evaluate(INSIDE_ALL)
    page.reload()
    page.wait_for_selector(".explorer[data-ready=true]")
    expect(page.get_by_test_id("editor-unfold")).to_be_visible()   # the person's choice holds
    page.get_by_test_id("editor-unfold").click()
    expect(page.get_by_test_id("checkpoint-policy")).to_be_visible()
    expect(page.get_by_test_id("editor-fold")).to_be_focused()
