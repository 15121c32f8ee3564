"""A graph a person can read at any size, as they see it at 1280x800: a 5,000-entry model (a real engine trace) opens
folded into a few legible boxes inside the panel, its long repeats bucketed into ranges; its lifetime chart opens as a
few named rows (parameters in one resident band) that open on a click; a row of the sweep panel, of the per-layer
table or of the peak breakdown selects the same thing in every view; a folded group shows where the sweep is; the
graph's folds and zoom survive a reload; deep inside it, the names of nested frames never overlap and the path around
the current node is named in view."""
import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from backend.driver import trace_spec
from backend.trace.document_versions import pack
from bench.browser import deep_spec
from tests.e2e.explorer_helpers import ARTIFACTS, choose, go_to_step, open_explorer, see_chart, trace_for

GRAPH = "[data-testid=graph]"
LABEL_HEIGHTS = """() => Array.from(document.querySelectorAll('[data-testid=graph] .node .label'),
  (label) => label.getBoundingClientRect().height).filter((h) => h > 0)"""
ALL_INSIDE = """() => {
  const panel = document.querySelector('[data-testid=graph]').getBoundingClientRect();
  return Array.from(document.querySelectorAll('[data-testid=graph] .node'), (n) => n.getBoundingClientRect())
    .every((r) => r.left >= panel.left - 1 && r.right <= panel.right + 1 && r.top >= panel.top - 1 && r.bottom <= panel.bottom + 1);
}"""
TICKS = "() => Array.from(document.querySelectorAll('[data-testid=lifetime-chart] .ytick text'), (t) => t.textContent.trim())"


@pytest.fixture(scope="module")
def big_trace():
    trace = trace_spec(deep_spec(5000))
    assert len(trace["tape"]) >= 5000
    return trace


def open_trace(page, base_url, trace):
    """The explorer showing `trace` (the engine's own document), served in place of the page's trace request in the
    wire form POST /api/trace sends (packed: 7 MB here, not the document's 20 MB, which Playwright's route would
    carry to the browser in ~2 s more a test)."""
    body = json.dumps(pack(trace), separators=(",", ":"))
    page.set_viewport_size({"width": 1280, "height": 800})
    page.route("**/api/trace", lambda route: route.fulfill(status=200, content_type="application/json", body=body))
    page.goto(f"{base_url}/")
    page.wait_for_selector(".explorer[data-ready=true]", timeout=120_000)


def settle(page):
    page.wait_for_function("() => !document.querySelector('[data-testid=graph]').dataset.panning")


def test_a_5000_entry_model_opens_folded_legible_and_inside_the_panel(page, live_server, big_trace):
    open_trace(page, live_server, big_trace)
    settle(page)
    drawn = page.locator(f"{GRAPH} .node").count()
    assert drawn <= 30, drawn
    heights = page.evaluate(LABEL_HEIGHTS)
    assert heights and min(heights) >= 9.995, heights
    assert page.evaluate(ALL_INSIDE)
    # The repeat's 28 iterations are bucketed: unfolding it shows ranges of at most 6, not 28 boxes in a row.
    page.locator(f"{GRAPH} .group-node[data-group-id='layers[0]'] rect").click()
    page.locator(f"{GRAPH} .group-frame[data-group-id='layers[0]']").wait_for()
    ranges = page.eval_on_selector_all(f"{GRAPH} .group-node", "ns => ns.map((n) => n.dataset.groupId).filter((id) => id.endsWith('#range'))")
    assert 2 <= len(ranges) <= 6, ranges
    assert all(re.fullmatch(r"layers\[0\]\[\d+–\d+\]#range", r) for r in ranges), ranges


@pytest.mark.parametrize("policy", ["none", "sqrt"])
def test_range_groups_read_in_layer_order_under_a_checkpoint_too(page, live_server, policy):
    """deep-mlp's 16 layers fold into ranges: each reads low to high and they follow one another, with or without
    sqrt checkpointing (whose layers are on the tape only by their recompute, last layers first)."""
    open_explorer(page, live_server, "deep-mlp")
    if policy != "none":
        choose(page, policy)
    ids = page.eval_on_selector_all(f"{GRAPH} [data-group-id]", "ns => [...new Set(ns.map((n) => n.dataset.groupId))]")
    ranges = sorted((int(a), int(b)) for a, b in (re.fullmatch(r"layers\[0\]\[(\d+)–(\d+)\]#range", i).groups()
                                                  for i in ids if i.endswith("#range")))
    assert len(ranges) >= 2, ids
    assert all(a < b for a, b in ranges), ranges
    assert ranges[0][0] == 0 and all(ranges[i][1] + 1 == ranges[i + 1][0] for i in range(len(ranges) - 1)), ranges


# The open frames around the current node, and every frame name drawn in the panel with its box on screen.
FRAME_NAMES = """() => {
  const panel = document.querySelector('[data-testid=graph]').getBoundingClientRect();
  const inPanel = (r) => r.width > 0 && r.right > panel.left && r.left < panel.right && r.bottom > panel.top && r.top < panel.bottom;
  const current = document.querySelector('[data-testid=graph] .node.current rect').getBoundingClientRect();
  const [cx, cy] = [current.left + current.width / 2, current.top + current.height / 2];
  const frames = Array.from(document.querySelectorAll('[data-testid=graph] .group-frame'));
  const around = frames.filter((f) => { const r = f.querySelector('rect.frame').getBoundingClientRect();
    return cx > r.left && cx < r.right && cy > r.top && cy < r.bottom; }).map((f) => ({id: f.dataset.groupId, depth: Number(f.dataset.depth)}));
  const names = frames.map((f) => { const r = f.querySelector('.frame-label').getBoundingClientRect();
    return {id: f.dataset.groupId, text: f.querySelector('.frame-label').textContent,
            box: [r.left, r.top, r.right, r.bottom], inside: r.left >= panel.left && r.right <= panel.right && r.top >= panel.top && r.bottom <= panel.bottom,
            drawn: inPanel(r)}; });
  return {around, names: names.filter((n) => n.drawn)};
}"""


def overlap(a, b):
    return a[0] < b[2] - 0.5 and b[0] < a[2] - 0.5 and a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5


def test_deep_in_a_5000_entry_model_nested_frame_names_never_overlap(page, live_server, big_trace):
    open_trace(page, live_server, big_trace)
    deep = next(s["index"] for s in big_trace["steps"] if s["phase"] == "forward" and s["entry"] == 2000)
    page.evaluate("s => window.tapescope.setStep(s)", deep)
    # The player unfolds the path down to entry 2000: four or more nested frames, sharing their top edges.
    page.wait_for_function("() => document.querySelectorAll('[data-testid=graph] .group-frame').length >= 4"
                           " && document.querySelector('[data-testid=graph] [data-node-id=\"2000\"].current')", timeout=30_000)
    settle(page)
    seen = page.evaluate(FRAME_NAMES)
    assert len(seen["around"]) >= 4, seen["around"]
    names = {n["id"]: n for n in seen["names"]}
    # Every frame around the current node is named inside the panel: its path reads as a breadcrumb there.
    for group in seen["around"]:
        assert group["id"] in names and names[group["id"]]["inside"], f"{group['id']} is not named in view: {seen}"
    # The innermost is named in full, with what it saves.
    innermost = max(seen["around"], key=lambda g: g["depth"])["id"]
    assert re.search(r"· \d+(\.\d+)? (B|KiB|MiB)$", names[innermost]["text"]), names[innermost]
    drawn = seen["names"]
    for i, a in enumerate(drawn):
        for b in drawn[i + 1:]:
            assert not overlap(a["box"], b["box"]), f"{a['text']!r} overlaps {b['text']!r}"
    Path(ARTIFACTS).mkdir(exist_ok=True)
    page.screenshot(path=str(Path(ARTIFACTS) / "graph-5000-deep-1280.png"))
    page.set_viewport_size({"width": 1920, "height": 1080})
    page.get_by_test_id("graph-fit").click()
    settle(page)
    page.evaluate("s => window.tapescope.setStep(s)", deep)
    settle(page)
    page.screenshot(path=str(Path(ARTIFACTS) / "graph-5000-deep-1920.png"))


def test_a_5000_entry_lifetime_chart_names_its_rows_and_opens_them(page, live_server, big_trace):
    open_trace(page, live_server, big_trace)
    chart = see_chart(page, "lifetime-chart")
    names = page.evaluate(TICKS)
    assert 2 <= len(names) <= 20 and all(names), names
    params = [t for t in big_trace["tensors"] if t["saved_by"] and t["kind"] == "param"]
    assert names[0] == f"▸ parameters (resident) · {len(params)}"
    rows = int(chart.get_attribute("data-rows"))
    # A click on a group's bar opens it: its members get rows of their own, each named.
    bar = page.locator("[data-testid=lifetime-chart] .bars .point").nth(names.index(next(n for n in names if "layers[0]" in n)))
    bar.scroll_into_view_if_needed()
    box = bar.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)   # as a person clicks a Plotly bar
    page.wait_for_function("n => Number(document.querySelector('[data-testid=lifetime-chart]').dataset.rows) > n", arg=rows)
    opened = page.evaluate(TICKS)
    assert any("▾ layers[0]" in n for n in opened) and all(opened)
    # Selecting a tensor deep inside opens its groups so its own row is named and outlined.
    deep = next(t for t in reversed(big_trace["tensors"]) if t["saved_by"] and t["kind"] == "activation" and t["produced_by"] is not None
                and t["scope"].startswith("layers[0]"))
    page.evaluate("id => window.tapescope.select(id)", f"t{deep['id']}")
    expect(chart).to_have_attribute("data-selected-tensor", str(deep["id"]))
    assert deep["name"] in page.evaluate(TICKS)
    assert int(chart.get_attribute("data-rows")) < 80


def selected_everywhere(page, tensor):
    """The selection as a person sees it: the node that made the tensor lit, its lifetime bar outlined, the inspector on it."""
    expect(page.locator(".explorer")).to_have_attribute("data-selected", f"t{tensor['id']}")
    expect(see_chart(page, "lifetime-chart")).to_have_attribute("data-selected-tensor", str(tensor["id"]))
    expect(page.locator(f"{GRAPH} .node.selected")).to_have_count(1)
    expect(page.locator("#inspector")).to_contain_text(tensor["name"])


def cleared_everywhere(page):
    page.keyboard.press("Escape")
    expect(page.locator(".explorer")).to_have_attribute("data-selected", "")
    expect(page.locator(f"{GRAPH} .node.selected")).to_have_count(0)
    expect(page.get_by_test_id("lifetime-chart")).to_have_attribute("data-selected-tensor", "")


def test_the_sweep_panel_the_per_layer_table_and_the_peak_breakdown_select_everywhere(page, live_server):
    trace = trace_for(page, live_server, "residual-unit")
    open_explorer(page, live_server, "residual-unit")
    tensors = {t["id"]: t for t in trace["tensors"]}
    sweep_step = next(s for s in trace["sweep"] if s["reads"])
    go_to_step(page, sweep_step["step"])
    chip = page.locator(f"[data-testid=sweep] .chip[data-select='t{sweep_step['reads'][0]}']").first
    chip.click()
    selected_everywhere(page, tensors[sweep_step["reads"][0]])
    cleared_everywhere(page)

    row = page.locator("tr[data-layer='layers[1]'][data-select]")
    row.scroll_into_view_if_needed()
    row.click()
    in_layer = [t for t in trace["tensors"] if t["saved_by"] and (t["scope"] or "").startswith("layers[1]")]
    largest = max(in_layer, key=lambda t: t["nbytes"])
    assert row.get_attribute("data-select") == f"t{largest['id']}"
    expect(page.locator(".explorer")).to_have_attribute("data-selected", f"t{largest['id']}")
    expect(page.locator("#inspector")).to_contain_text(largest["name"])
    cleared_everywhere(page)

    button = page.locator("[data-testid=peak-breakdown] button.group[data-kind=activation]").first
    button.scroll_into_view_if_needed()
    button.click()
    chosen = page.evaluate("window.tapescope.getSelected()")
    assert chosen and chosen.startswith("t")
    expect(see_chart(page, "lifetime-chart")).to_have_attribute("data-selected-tensor", chosen[1:])
    expect(page.locator("#inspector")).to_contain_text(tensors[int(chosen[1:])]["name"])
    cleared_everywhere(page)


def held_bytes(trace, scope, step):
    """What `scope`'s entries saved and the tape still holds at `step`: recorded by a saving entry, alive, and not yet
    released by the sweep (the trace's own intervals and sweep items)."""
    inside = {e["index"] for e in trace["tape"] if (e["scope"] or "").startswith((scope + ".", scope + "["))}
    recorded_at = {}
    for s in trace["steps"]:
        if s["entry"] is not None and ((s["phase"] == "forward" and s.get("recorded") is not False) or s["phase"] == "recompute"):
            recorded_at.setdefault(s["entry"], s["index"])
    released_at = {}      # the last saving node to run lets go of it (each node releases its own reference)
    for item in trace["sweep"]:
        for tensor_id in item["freed"]:
            released_at[tensor_id] = max(item["step"], released_at.get(tensor_id, -1))

    def held(t):
        alive = t["born"] <= step and (t["freed"] is None or step <= t["freed"])
        recorded = any(recorded_at.get(e, float("inf")) <= step for e in t["saved_by"])
        return alive and recorded and step < released_at.get(t["id"], float("inf"))
    return sum(t["nbytes"] for t in trace["tensors"] if t["saved_by"] and t["produced_by"] in inside and held(t))


def test_a_folded_group_shows_where_the_sweep_is_and_what_it_still_holds(page, live_server):
    trace = trace_for(page, live_server, "transformer-tiny")
    open_explorer(page, live_server, "transformer-tiny")
    in_block_2 = next(s for s in trace["steps"] if s["phase"] == "backward" and s["entry"] is not None
                      and trace["tape"][s["entry"]]["scope"].startswith("layers[2]."))
    go_to_step(page, in_block_2["index"])
    block_1 = page.locator(f"{GRAPH} .group-node[data-group-id='layers[1]']")
    expect(block_1).to_have_attribute("data-state", "pending")
    expect(block_1).to_have_attribute("data-held-bytes", str(held_bytes(trace, "layers[1]", in_block_2["index"])))
    assert int(block_1.get_attribute("data-held-bytes")) > 0
    expect(block_1.locator(".group-state")).to_contain_text("pending · holds")
    last_backward = max(s["index"] for s in trace["steps"] if s["phase"] == "backward")
    go_to_step(page, last_backward)
    expect(block_1).to_have_attribute("data-state", "done")
    expect(block_1).to_have_attribute("data-held-bytes", "0")


def test_the_graphs_folds_and_zoom_survive_a_reload(page, live_server):
    open_explorer(page, live_server, "transformer-tiny")
    page.locator(f"{GRAPH} .group-node[data-group-id='layers[1]'] rect").click()
    page.locator(f"{GRAPH} .group-frame[data-group-id='layers[1]']").wait_for()
    page.get_by_test_id("graph-zoom-in").click()
    settle(page)
    scale = page.evaluate(f"() => document.querySelector('{GRAPH}').dataset.scale")
    page.wait_for_function("() => window.tapescope.saveState() === 'saved'", timeout=10000)
    page.wait_for_function("s => window.tapescope.workspace.zoom && window.tapescope.workspace.zoom.k.toFixed(3) === s", arg=scale)
    page.wait_for_function("() => window.tapescope.saveState() === 'saved'", timeout=10000)
    page.reload()
    page.wait_for_selector(".explorer[data-ready=true]")
    page.locator(f"{GRAPH} .group-frame[data-group-id='layers[1]']").wait_for()
    assert page.evaluate(f"() => document.querySelector('{GRAPH}').dataset.scale") == scale
    assert page.locator(f"{GRAPH} .group-node[data-group-id='layers[2]']").count() == 1
