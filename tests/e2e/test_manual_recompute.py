"""Manual recomputation in the explorer, in a real browser: pick "manual", click op nodes to recompute their outputs
instead of saving them, and check the page against the server's executed schedule. transformer-tiny runs with SGD
(set in the editor's JSON) so that activations, not Adam's moments, set the peak."""
import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.explorer_helpers import open_explorer, see_charts, shown_trace

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
READY = "document.querySelector('.explorer').dataset.ready === 'true'"


@pytest.fixture
def errors(page):
    seen = []
    page.on("pageerror", lambda error: seen.append(str(error)))
    page.on("console", lambda m: seen.append(m.text) if m.type == "error"
            and "favicon" not in m.location.get("url", "") and "400" not in m.text else None)
    yield seen
    assert seen == []


@pytest.fixture
def bodies(page):
    """The JSON bodies of every POST /api/trace the page sends."""
    sent = []
    page.on("request", lambda r: sent.append(r.post_data_json) if r.url.endswith("/api/trace") and r.method == "POST" else None)
    return sent


def wait_manual(page, ids):
    page.wait_for_function(
        f"""ids => {{
             const s = window.tapescope.getTrace()?.schedule;
             return s && s.policy === 'manual' && JSON.stringify(s.params.recompute) === JSON.stringify(ids) && {READY};
           }}""", arg=ids, timeout=30000)
    return shown_trace(page)


def with_sgd(page):
    page.get_by_test_id("json-tab").click()
    spec = json.loads(page.get_by_test_id("spec-json").input_value())
    spec["optimizer"] = {"type": "sgd", "lr": 0.01}
    page.get_by_test_id("spec-json").fill(json.dumps(spec, indent=2))
    page.get_by_test_id("apply").click()
    page.wait_for_function(f"() => window.tapescope.getTrace()?.spec.optimizer.type === 'sgd' && {READY}", timeout=30000)
    page.locator("#editor-tab-form").click()


def click_node(page, selector):
    """Click a graph node as a person would, after stepping the player to it so the graph pans it into view."""
    node = page.locator(f"[data-testid=graph] {selector}")
    node.scroll_into_view_if_needed()
    node.locator("rect").first.click()


def test_manual_recompute_of_the_first_softmax(page, live_server, errors, bodies):
    open_explorer(page, live_server, "transformer-tiny")
    with_sgd(page)
    page.get_by_test_id("checkpoint-policy").select_option("manual")
    trace = wait_manual(page, [])
    expect(page.get_by_test_id("manual-set").locator("li")).to_have_count(0)
    softmax = next(e for e in trace["tape"] if e["op"] == "softmax" and e["scope"] == "layers[1].attn")
    target = softmax["output"]

    page.evaluate("step => window.tapescope.setStep(step)", softmax["index"] + 1)   # the graph follows the cursor
    click_node(page, f"[data-node-id='{softmax['index']}']")
    trace = wait_manual(page, [target])
    assert bodies[-1]["checkpoint"] == {"policy": "manual", "recompute": [target], "preserve_rng_state": True}
    assert bodies[-1]["spec"]["optimizer"]["type"] == "sgd"
    schedule = trace["schedule"]
    assert schedule["recomputed"] == [target] and schedule["grads_match"] is True
    assert schedule["predicted_peak_bytes"] == schedule["executed_peak_bytes"]
    expect(page.get_by_test_id("peak-bytes")).to_have_attribute("data-bytes", str(schedule["executed_peak_bytes"]))
    node = page.locator(f"[data-testid=graph] [data-node-id='{softmax['index']}']")
    expect(node).to_have_class(re.compile(r"\brecompute-node\b"))
    expect(node.locator(".recompute-badge")).to_have_count(1)
    chips = page.get_by_test_id("manual-set").locator("li")
    expect(chips).to_have_count(1)
    expect(chips.first).to_contain_text("softmax · layers[1].attn")
    summary = page.get_by_test_id("schedule-summary")
    expect(summary).to_contain_text("manual (1 tensor): peak")
    expect(summary).to_contain_text("grads bitwise equal")
    expect(page.get_by_test_id("grad-mismatch")).to_be_hidden()
    toggle = page.get_by_test_id("toggle-recompute")
    expect(toggle).to_be_enabled()
    expect(toggle).to_have_attribute("aria-pressed", "true")
    # the Pareto panel marks the current run
    expect(page.get_by_test_id("pareto-chart")).to_have_attribute("data-current", "manual (1 tensor)")

    # a parameter is a leaf: the inspector's button is greyed out with its reason, and nothing is sent
    n = len(bodies)
    param = next(leaf for leaf in trace["graph"]["leaves"] if leaf["kind"] == "param")
    page.evaluate("id => window.tapescope.select(id)", param["id"])
    expect(toggle).to_be_disabled()
    expect(page.get_by_test_id("recompute-reason")).to_contain_text("a parameter, a leaf")
    toggle.click(force=True)
    page.wait_for_timeout(400)
    assert len(bodies) == n

    # the set survives a re-trace with the same spec (tensor ids are stable)
    page.get_by_test_id("checkpoint-rng").set_checked(False)
    page.wait_for_function(f"() => window.tapescope.getTrace()?.schedule?.preserve_rng_state === false && {READY}", timeout=30000)
    assert bodies[-1]["checkpoint"]["recompute"] == [target]
    expect(chips).to_have_count(1)
    page.get_by_test_id("checkpoint-rng").set_checked(True)
    page.wait_for_function(f"() => window.tapescope.getTrace()?.schedule?.preserve_rng_state === true && {READY}", timeout=30000)
    assert bodies[-1]["checkpoint"] == {"policy": "manual", "recompute": [target], "preserve_rng_state": True}

    # a tensor the server refuses (a view) shows its problem at the control; removing its chip clears it
    view = next(t for t in trace["tensors"] if t.get("view") and t["saved_by"])
    page.evaluate("id => window.tapescope.toggleRecompute(id)", view["id"])   # past the graph's own refusal
    error = page.locator("[data-testid=field-error][data-problem-path='checkpoint.recompute']")
    expect(error).to_contain_text(f"tensor {view['id']} ({view['name']}) cannot be recomputed")
    expect(page.locator(".explorer")).to_have_attribute("data-ready", "true")
    assert page.evaluate("window.tapescope.getTrace().schedule.params.recompute") == [target]
    # the trace shown is still [target]'s (the refused one never replaced it): wait for the request the removal sends
    with page.expect_request(lambda r: r.url.endswith("/api/trace") and r.method == "POST"):
        page.locator(f"[data-testid=manual-remove][data-tensor='{view['id']}']").click()
    wait_manual(page, [target])
    expect(error).to_have_count(0)
    assert bodies[-1]["checkpoint"] == {"policy": "manual", "recompute": [target], "preserve_rng_state": True}
    expect(page.get_by_test_id("schedule-summary")).not_to_contain_text("nothing random")

    page.evaluate("step => window.tapescope.setStep(step)", softmax["index"] + 1)
    page.evaluate("id => window.tapescope.select(id)", f"e{softmax['index']}")
    ARTIFACTS.mkdir(exist_ok=True)
    see_charts(page)                            # a full page does not scroll: the charts are plotted first
    page.screenshot(path=str(ARTIFACTS / "manual-recompute.png"), full_page=True)
    node.scroll_into_view_if_needed()
    page.wait_for_timeout(400)                  # the graph's follow pan settles on the selected node
    box, view = node.bounding_box(), page.viewport_size
    x, y = max(0, box["x"] - 150), max(0, box["y"] - 40)
    if x < view["width"] and y < view["height"]:     # the node's neighbourhood, cut to what is on screen
        page.screenshot(path=str(ARTIFACTS / "manual-recompute-node.png"), clip={
            "x": x, "y": y, "width": min(box["width"] + 300, view["width"] - x),
            "height": min(box["height"] + 80, view["height"] - y)})

    # the inspector's button toggles it back out
    toggle.click()
    wait_manual(page, [])
    expect(chips).to_have_count(0)
    expect(page.locator(f"[data-testid=graph] [data-node-id='{softmax['index']}']")).not_to_have_class(re.compile(r"\brecompute-node\b"))


def test_a_spec_edit_clears_the_manual_set(page, live_server, errors, bodies):
    open_explorer(page, live_server, "transformer-tiny")
    page.get_by_test_id("checkpoint-policy").select_option("manual")
    trace = wait_manual(page, [])
    gelu = next(e for e in trace["tape"] if e["op"] == "gelu")
    page.evaluate("id => window.tapescope.select(id)", f"e{gelu['index']}")
    page.get_by_test_id("toggle-recompute").click()
    wait_manual(page, [gelu["output"]])
    expect(page.locator(".manual-reset")).to_contain_text("Editing the model clears this set")
    page.locator('#editor-panel .editor-form [data-field="batch"] > [data-path="batch"]').fill("3")
    page.wait_for_function(f"() => window.tapescope.getTrace()?.spec.batch === 3 && {READY}", timeout=30000)
    wait_manual(page, [])
    assert bodies[-1]["checkpoint"]["recompute"] == []
    expect(page.get_by_test_id("manual-set").locator("li")).to_have_count(0)
