"""'Why this peak' in a real browser: the breakdown at the cursor equals the document's bytes, a bar selects its
tensors, and the levers table shows what the server traced for each lever."""
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.explorer_helpers import at_every_step_there_and_back, go_to_step, open_explorer, presets, shown_trace

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def breakdown_bytes(page):
    return page.locator("[data-testid=peak-breakdown] [data-bytes]").evaluate_all(
        "items => items.map(i => Number(i.dataset.bytes))")


def test_the_breakdown_at_three_steps_is_the_documents_live_bytes(page, live_server):
    open_explorer(page, live_server, "deep-mlp")
    trace = shown_trace(page)
    explainer = page.get_by_test_id("peak-explainer")
    expect(page.get_by_test_id("peak-verdict")).to_have_text(trace["summary"]["peak"]["verdict"])
    for step in (3, trace["summary"]["peak_step"], len(trace["steps"]) - 1):
        go_to_step(page, step)
        expected = trace["steps"][step]["live_bytes"]
        expect(page.get_by_test_id("explainer-live")).to_have_attribute("data-bytes", str(expected))
        assert sum(breakdown_bytes(page)) == expected
    go_to_step(page, trace["summary"]["peak_step"])
    expect(explainer).to_contain_text("this is the peak")
    ARTIFACTS.mkdir(exist_ok=True)
    for width, height in ((1280, 800), (1920, 1080)):
        page.set_viewport_size({"width": width, "height": height})
        explainer.scroll_into_view_if_needed()
        explainer.screenshot(path=str(ARTIFACTS / f"peak-explainer-{width}.png"))


def test_at_every_step_the_bars_kept_from_step_to_step_are_that_steps(page, live_server):
    """The bars are updated in place as the cursor moves: at each step of a forward and backward, in order and then
    backwards, they sum to that step's live bytes, each says its own bytes, and none is a row left from another step."""
    open_explorer(page, live_server, "transformer-tiny")
    trace = shown_trace(page)
    seen = at_every_step_there_and_back(page, """() => {
        const bars = [...document.querySelectorAll("[data-testid=peak-breakdown] > li")];
        return { bytes: bars.map((li) => Number((li.querySelector("[data-bytes]") ?? li).dataset.bytes)),
                 texts: bars.map((li) => li.querySelector(".group-bytes")?.textContent ?? li.textContent),
                 keys: bars.map((li) => li.querySelector("button")?.dataset.layer + "/" + li.querySelector("button")?.dataset.kind) };
      }""")
    assert len(seen) == 2 * len(trace["steps"])
    for shown in seen:
        step = shown["step"]
        assert sum(shown["bytes"]) == trace["steps"][step]["live_bytes"], step
        groups = [b for b, key in zip(shown["bytes"], shown["keys"]) if key != "undefined/undefined"]
        assert groups == sorted(groups, reverse=True), step                  # largest first
        assert len(set(shown["keys"])) == len(shown["keys"]), step           # no group twice
        for text, nbytes in zip(shown["texts"], shown["bytes"]):             # each says its own bytes
            assert said_bytes(text) == pytest.approx(nbytes, rel=0.06, abs=0.5), (step, text, nbytes)


def said_bytes(text):
    """The first "1.5 KiB"-style figure of a bar's text, in bytes (formatBytes rounds to 3 significant digits)."""
    number, unit = re.search(r"([\d.]+) (B|KiB|MiB|GiB)", text).groups()
    return float(number) * 1024 ** ["B", "KiB", "MiB", "GiB"].index(unit)


def test_clicking_a_bar_selects_the_largest_tensor_of_its_group(page, live_server):
    open_explorer(page, live_server, "deep-mlp")
    trace = shown_trace(page)
    go_to_step(page, trace["summary"]["peak_step"])
    bar = page.locator("[data-testid=peak-breakdown] button.group[data-kind=activation]").first
    layer = bar.get_attribute("data-layer")
    bar.click()
    selected = page.evaluate("window.tapescope.getSelected()")
    tensors = {t["id"]: t for t in trace["tensors"]}
    storages = {s["id"]: s for s in trace["storages"]}
    chosen = tensors[int(selected[1:])]
    storage = storages[chosen["storage"]]
    assert storage["kind"] == "activation" and storage["scope"].startswith(layer)
    expect(page.locator("#inspector")).to_contain_text(chosen["name"])


def test_the_levers_on_transformer_tiny_list_sgd_with_its_traced_peak(page, live_server):
    open_explorer(page, live_server, "transformer-tiny")
    expect(page.get_by_test_id("peak-verdict")).to_contain_text("optimizer step")
    page.get_by_test_id("find-levers").click()
    row = page.locator("[data-testid=levers] tr[data-lever='SGD instead of Adam']")
    expect(row).to_be_visible(timeout=60000)
    spec = presets(page, live_server)["transformer-tiny"]["spec"]
    spec["optimizer"] = {"type": "sgd", "lr": spec["optimizer"]["lr"]}
    traced = page.request.post(f"{live_server}/api/trace", data={"spec": spec}).json()["summary"]["peak_bytes"]
    expect(row.locator("td.num [data-bytes]").first).to_have_attribute("data-bytes", str(traced))
    ARTIFACTS.mkdir(exist_ok=True)
    page.get_by_test_id("peak-explainer").screenshot(path=str(ARTIFACTS / "peak-explainer-levers-1280.png"))
    row.locator("button.apply-lever").click()
    page.wait_for_function("() => window.tapescope.getTrace().spec.optimizer.type === 'sgd'"
                           " && document.querySelector('.explorer').dataset.ready === 'true'", timeout=30000)
    expect(page.get_by_test_id("peak-bytes")).to_have_attribute("data-bytes", str(traced))
    page.get_by_test_id("undo").click()
    page.wait_for_function("() => window.tapescope.getTrace().spec.optimizer.type === 'adam'", timeout=30000)
    # back on the model the levers ran on: the same table, without asking the server again
    asked = []
    page.on("request", lambda r: asked.append(r.url) if r.url.endswith("/api/levers") else None)
    expect(row).to_be_visible()
    expect(page.get_by_test_id("find-levers")).to_have_count(0)
    page.wait_for_timeout(300)
    assert asked == []


def test_the_levers_include_the_frontiers_optimal_schedules_and_one_applies(page, live_server):
    open_explorer(page, live_server, "deep-mlp")
    page.get_by_test_id("find-levers").click()
    optimal = page.locator("[data-testid=levers] tr[data-lever^='checkpoint: optimal ≤ ']")
    expect(optimal.first).to_be_visible(timeout=60000)
    assert 1 <= optimal.count() <= 3
    expect(optimal.first).to_contain_text("Pareto frontier")
    optimal.first.locator("button.apply-lever").click()
    page.wait_for_function("() => window.tapescope.getTrace().schedule?.policy === 'optimal'"
                           " && document.querySelector('.explorer').dataset.ready === 'true'", timeout=30000)
