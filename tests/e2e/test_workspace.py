"""The workspace in a real browser: it autosaves and reopens exactly where it was (reload, Back, a new tab), a stale
tab gets a banner instead of overwriting, the address opens a preset or a snapshot at a step, and comparisons are
against the pinned baseline or the last settled run of the same model, never a mid-drag trace or another preset."""
import json
import re
import time
from urllib.error import HTTPError
from urllib.parse import urlsplit
from urllib.request import Request, urlopen

import pytest

from playwright.sync_api import expect

from backend.models.caps import CAPS
from backend.trace.document_versions import unpack
from tests.e2e.explorer_helpers import go_to_step, live_bytes, open_explorer, see_chart, shown_trace

READY = "document.querySelector('.explorer').dataset.ready === 'true'"


def api_post(base, path, body):
    """POST JSON, coming back while the engine is busy (503: a page's schedules may still be running on it)."""
    for _ in range(20):
        request = Request(f"{base}{path}", data=json.dumps(body).encode(),
                          headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urlopen(request) as response:
                return json.load(response)
        except HTTPError as error:
            if error.code != 503:
                raise
            time.sleep(min(2.0, float(error.headers.get("Retry-After", 1))))
    raise AssertionError(f"{path} stayed busy")


def api_trace(base, spec, checkpoint=None):
    return unpack(api_post(base, "/api/trace", {"spec": spec, **({"checkpoint": checkpoint} if checkpoint else {})}))


def preset_trace(page, base, preset_id):
    spec = next(p["spec"] for p in page.request.get(f"{base}/api/presets").json() if p["id"] == preset_id)
    return api_trace(base, spec)


def field(page, path):
    return page.locator(f'#editor-panel .editor-form [data-field="{path}"] > [data-path="{path}"]')


def traced_after(page, count, check="true"):
    """Wait for a trace shown after `count` that satisfies the JS expression `check` (t is the trace)."""
    page.wait_for_function(f"n => window.tapescope.traceCount() > n && {READY} && (t => {check})(window.tapescope.getTrace())",
                           arg=count, timeout=30000)
    return shown_trace(page)


def saved(page):
    page.wait_for_function("() => window.tapescope.saveState() === 'saved'", timeout=10000)


def edit(page, path, value, check="true"):
    count = page.evaluate("window.tapescope.traceCount()")
    field(page, path).fill(str(value))
    return traced_after(page, count, check)


def session(page, base):
    return page.request.get(f"{base}/api/session").json()


def opened_where_it_was(page, spec, checkpoint, step, selected, peak):
    page.wait_for_selector(".explorer[data-ready=true]", timeout=30000)
    assert page.evaluate("window.tapescope.traceCount()") == 1          # no other model (seed-tape) drawn first
    assert page.evaluate("window.tapescope.getTrace().spec") == spec
    assert page.evaluate("window.tapescope.getCheckpoint()")["policy"] == checkpoint
    assert page.evaluate("window.tapescope.getStep()") == step
    assert page.evaluate("window.tapescope.getSelected()") == selected
    assert int(page.get_attribute("[data-testid=peak-bytes]", "data-bytes")) == peak
    expect(page.get_by_test_id("model-origin")).to_have_text("edited from deep-mlp")
    expect(page.get_by_test_id("preset")).to_have_value("deep-mlp")
    expect(page.get_by_test_id("checkpoint-policy")).to_have_value(checkpoint)


def test_edit_policy_step_and_selection_survive_a_reload_and_ledger_then_back(page, live_server):
    open_explorer(page, live_server, "deep-mlp")
    expect(page.get_by_test_id("model-origin")).to_have_text("")           # the dropdown says deep-mlp, once
    trace = edit(page, "layers[0].layers[0].out", 48, "t.spec.layers[0].layers[0].out === 48")
    expect(page.get_by_test_id("model-origin")).to_have_text("edited from deep-mlp")
    count = page.evaluate("window.tapescope.traceCount()")
    page.get_by_test_id("checkpoint-policy").select_option("sqrt")
    trace = traced_after(page, count, "t.schedule && t.schedule.policy === 'sqrt'")
    go_to_step(page, 14)
    tensor = next(t for t in trace["tensors"] if t["saved_by"])
    selected = f"t{tensor['id']}"
    page.evaluate("id => window.tapescope.select(id)", selected)
    saved(page)
    assert page.url.endswith(f"#step=14&select={selected}")

    spec = json.loads(page.get_by_test_id("spec-json").input_value())
    expected = api_trace(live_server, spec, {"policy": "sqrt"})
    assert expected["summary"]["peak_bytes"] == trace["summary"]["peak_bytes"]
    stored = session(page, live_server)
    assert stored["spec"] == spec and stored["checkpoint"]["policy"] == "sqrt"
    assert stored["view"]["step"] == 14 and stored["view"]["selected"] == selected

    page.reload()
    opened_where_it_was(page, trace["spec"], "sqrt", 14, selected, expected["summary"]["peak_bytes"])
    assert live_bytes(page) == expected["steps"][14]["live_bytes"]

    page.click("nav a[href='/ledger']")
    page.wait_for_url(f"{live_server}/ledger*")
    page.go_back()
    page.wait_for_function("() => window.tapescope && window.tapescope.getTrace()", timeout=30000)
    page.wait_for_selector(".explorer[data-ready=true]", timeout=30000)
    assert page.evaluate("window.tapescope.getTrace().spec") == trace["spec"]
    assert page.evaluate("window.tapescope.getStep()") == 14
    assert page.evaluate("window.tapescope.getSelected()") == selected
    assert int(page.get_attribute("[data-testid=peak-bytes]", "data-bytes")) == expected["summary"]["peak_bytes"]

    # undo is where it was too: one undo goes back to the preset's width with sqrt still chosen
    page.get_by_test_id("undo").click()
    page.wait_for_function(f"() => window.tapescope.getTrace().spec.layers[0].layers[0].out === 48 && {READY}"
                           " && window.tapescope.getCheckpoint().policy === 'none'", timeout=30000)
    saved(page)                                   # the tab that came Back saves without a conflict with itself
    expect(page.get_by_test_id("conflict-banner")).to_be_hidden()
    assert session(page, live_server)["checkpoint"]["policy"] == "none"


def test_a_second_tab_with_a_stale_version_gets_a_409_banner_and_nothing_is_lost(browser, live_server):
    first_context = browser.new_context(viewport={"width": 1280, "height": 800})
    second_context = None
    try:
        first = first_context.new_page()
        open_explorer(first, live_server, "seed-tape")
        edit(first, "batch", 100, "t.spec.batch === 100")
        saved(first)
        second_context = browser.new_context(viewport={"width": 1280, "height": 800})
        second_context.add_cookies(first_context.cookies())             # the same browser's other tab
        second = second_context.new_page()
        second.goto(f"{live_server}/")
        second.wait_for_selector(".explorer[data-ready=true]", timeout=30000)
        assert second.evaluate("window.tapescope.getTrace().spec.batch") == 100

        edit(first, "batch", 120, "t.spec.batch === 120")
        saved(first)
        statuses = []
        second.on("response", lambda r: statuses.append(r.status) if r.url.endswith("/api/session") and r.request.method == "PUT" else None)
        edit(second, "batch", 130, "t.spec.batch === 130")
        banner = second.get_by_test_id("conflict-banner")
        expect(banner).to_be_visible()
        expect(banner).to_contain_text("changed in another tab")
        assert 409 in statuses
        assert session(first, live_server)["spec"]["batch"] == 120          # the other tab's edit was not overwritten
        second.screenshot(path="test-artifacts/workspace-conflict.png")

        second.get_by_test_id("conflict-keep").click()
        expect(banner).to_be_hidden()
        saved(second)
        stored = session(first, live_server)
        assert stored["spec"]["batch"] == 130
        assert 120 in [entry["spec"]["batch"] for entry in stored["history"]["undo"]]   # theirs, one undo away
    finally:
        first_context.close()
        if second_context is not None:
            second_context.close()


def test_the_address_opens_a_preset_at_a_step_with_a_selection(page, live_server):
    trace = preset_trace(page, live_server, "deep-mlp")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server}/?preset=deep-mlp#step=14&select=t7")
    page.wait_for_selector(".explorer[data-ready=true]", timeout=30000)
    assert page.evaluate("window.tapescope.getTrace().spec.name") == "deep-mlp"
    assert page.evaluate("window.tapescope.getStep()") == 14
    assert live_bytes(page) == trace["steps"][14]["live_bytes"]
    assert page.evaluate("window.tapescope.getSelected()") == "t7"
    expect(page.get_by_test_id("preset")).to_have_value("deep-mlp")
    expect(page.get_by_test_id("model-origin")).to_have_text("")
    # stepping moves the hash without a history entry per step
    history_length = page.evaluate("history.length")
    page.get_by_test_id("step-forward").click()
    page.get_by_test_id("step-forward").click()
    expect(page).to_have_url(re.compile(r"/\?preset=deep-mlp#step=16&select=t7$"))   # the model stays in the address
    assert page.evaluate("history.length") == history_length


def test_a_copied_address_opens_the_same_model_step_and_selection_in_a_fresh_browser(browser, live_server):
    """`/?preset=deep-mlp#step=14` once became `/#step=14`, which opened seed-tape at step 0 elsewhere."""
    contexts = [browser.new_context(viewport={"width": 1280, "height": 800}) for _ in range(3)]
    try:
        first = contexts[0].new_page()
        first.goto(f"{live_server}/?preset=deep-mlp#step=14&select=t7")
        first.wait_for_selector(".explorer[data-ready=true]")
        first.get_by_test_id("step-forward").click()
        expect(first).to_have_url(re.compile(r"\?preset=deep-mlp#step=15&select=t7$"))
        copied = first.url
        elsewhere = contexts[1].new_page()
        elsewhere.goto(copied)
        elsewhere.wait_for_selector(".explorer[data-ready=true]")
        assert elsewhere.evaluate("window.tapescope.getTrace().spec.name") == "deep-mlp"
        assert elsewhere.evaluate("window.tapescope.getStep()") == 15
        assert elsewhere.evaluate("window.tapescope.getSelected()") == "t7"
        # a zoom of the graph goes into the address too, and opens at the same scale elsewhere, the current node in
        # view (the folds there are the opening's, so the player may pan to the cursor)
        first.get_by_test_id("graph-zoom-out").click()
        expect(first).to_have_url(re.compile(r"#step=15&select=t7&view=[\d.]+,-?\d+,-?\d+$"))
        scale = float(re.search(r"view=([\d.]+),", first.url).group(1))
        zoomed = contexts[1].new_page()
        zoomed.goto(first.url)
        zoomed.wait_for_selector(".explorer[data-ready=true]")
        zoomed.wait_for_function("() => !document.querySelector('[data-testid=graph]').dataset.panning")
        assert abs(float(zoomed.get_attribute("[data-testid=graph]", "data-scale")) - scale) < 2e-3
        assert zoomed.evaluate("""() => {
          const panel = document.querySelector('[data-testid=graph]').getBoundingClientRect();
          const r = document.querySelector('[data-testid=graph] .node.current').getBoundingClientRect();
          const [x, y] = [r.left + r.width / 2, r.top + r.height / 2];
          return x > panel.left && x < panel.right && y > panel.top && y < panel.bottom;
        }""")
        # an edited model says so in its address, and opening that elsewhere says to use Share
        edit(first, "layers[0].layers[0].out", 48, "t.spec.layers[0].layers[0].out === 48")
        expect(first).to_have_url(re.compile(r"\?preset=deep-mlp&edited=1#"))
        other = contexts[2].new_page()                                      # a browser with no workspace yet
        other.goto(first.url)
        other.wait_for_selector(".explorer[data-ready=true]")
        expect(other.locator("#status")).to_contain_text("use Share")
        # a step past the run's end is clamped, and says so
        past = contexts[1].new_page()
        past.goto(f"{live_server}/?preset=seed-tape#step=999")
        past.wait_for_selector(".explorer[data-ready=true]")
        expect(past.locator("#status")).to_contain_text("step 999 is past this run's last step")
    finally:
        for context in contexts:
            context.close()


def test_a_snapshot_link_with_a_step_opens_there_and_reads_with_a_mouse(page, live_server):
    trace = preset_trace(page, live_server, "deep-mlp")
    url = api_post(live_server, "/api/snapshots", {"spec": trace["spec"], "view": {"step": 3}})["url"]
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server}{url}#step=20")
    page.wait_for_selector(".explorer[data-ready=true]", timeout=30000)
    assert page.evaluate("window.tapescope.getStep()") == 20
    assert live_bytes(page) == trace["steps"][20]["live_bytes"]
    expect(page.get_by_test_id("preset")).to_have_value("deep-mlp")
    expect(page.get_by_test_id("model-origin")).to_contain_text("deep-mlp")

    panel = page.locator("#editor-panel")
    panel.hover()
    scrolled = panel.evaluate("p => p.scrollTop")
    page.mouse.wheel(0, 400)
    page.wait_for_function("s => document.getElementById('editor-panel').scrollTop > s", arg=scrolled)
    page.get_by_test_id("json-tab").click()
    expect(page.get_by_test_id("spec-json")).to_be_visible()
    assert json.loads(page.get_by_test_id("spec-json").input_value())["name"] == "deep-mlp"
    page.get_by_role("tab", name="Form").click()
    expect(page.locator("#editor-panel .editor-form")).to_be_visible()

    page.click("[data-testid=share]")
    step_link = page.get_by_test_id("share-step-link")
    expect(step_link).to_contain_text("link to this step (20)")
    assert step_link.get_attribute("href").endswith("#step=20")
    # The link reads as its path (the whole address is copied, and in its title): one line beside Share, where the
    # whole address once broke over two.
    link = page.get_by_test_id("share-link")
    assert link.text_content() == urlsplit(link.get_attribute("href")).path and link.get_attribute("title") == link.get_attribute("href")
    font = page.evaluate("parseFloat(getComputedStyle(document.getElementById('share-output')).fontSize)")
    assert page.locator("#share-output").bounding_box()["height"] < 2 * font          # one line of text


def test_a_preset_switch_has_no_delta_and_no_ghost(page, live_server):
    open_explorer(page, live_server, "seed-tape")
    edit(page, "batch", 128, "t.spec.batch === 128")
    expect(page.get_by_test_id("peak-delta")).to_contain_text("→")
    go_to_step(page, 5)
    count = page.evaluate("window.tapescope.traceCount()")
    page.select_option("[data-testid=preset]", "residual-unit")
    traced_after(page, count, "t.spec.name === 'residual-unit'")
    expect(page.get_by_test_id("peak-delta")).to_have_text("")
    see_chart(page, "memory-chart")
    names = page.evaluate("Array.from(document.querySelector('[data-testid=memory-chart]').data, d => d.name)")
    assert "previous run" not in names
    assert page.evaluate("window.tapescope.getStep()") == 0
    expect(page.get_by_test_id("preset")).to_have_value("residual-unit")
    expect(page.get_by_test_id("model-origin")).to_have_text("")

    # undo past the switch shows the preset it came from
    count = page.evaluate("window.tapescope.traceCount()")
    page.get_by_test_id("undo").click()
    traced_after(page, count, "t.spec.name === 'seed-tape' && t.spec.batch === 128")
    expect(page.get_by_test_id("model-origin")).to_have_text("edited from seed-tape")
    expect(page.get_by_test_id("preset")).to_have_value("seed-tape")


def drag_slider(page, slider, start, end, low, high, steps=24):
    box = slider.bounding_box()
    thumb = 8                                     # half of Chromium's range thumb, roughly
    x_of = lambda value: box["x"] + thumb + (value - low) / (high - low) * (box["width"] - 2 * thumb)
    y = box["y"] + box["height"] / 2
    page.mouse.move(x_of(start), y)
    page.mouse.down()
    for i in range(1, steps + 1):
        page.mouse.move(x_of(start + (end - start) * i / steps), y)
        page.wait_for_timeout(40)                # a person's drag: the throttled traces land mid-drag
    page.mouse.move(box["x"] + box["width"] + 20, y)   # past the end: the slider's maximum
    page.wait_for_timeout(400)
    page.mouse.up()


def test_a_slider_drag_compares_with_where_it_started_and_a_pin_holds(page, live_server, monkeypatch):
    monkeypatch.setitem(CAPS, "batch", 256)       # the slider spans the batch cap: 1..256 here, so the drag ends at 256
    seed = preset_trace(page, live_server, "seed-tape")
    open_explorer(page, live_server, "seed-tape")
    start_count = page.evaluate("window.tapescope.traceCount()")
    slider = page.locator("#editor-panel input[type=range][data-path=batch]")
    drag_slider(page, slider, 64, 256, 1, 256)
    after = traced_after(page, start_count, "t.spec.batch === 256")
    page.wait_for_function("() => window.tapescope.saveState() === 'saved'", timeout=10000)
    assert page.evaluate("window.tapescope.traceCount()") - start_count >= 2      # traces did land mid-drag
    delta = page.inner_text("[data-testid=peak-delta]")
    assert expected_peak_text(page, seed["summary"]["peak_bytes"]) == "49.3 KiB"
    assert delta.startswith(f"peak 49.3 KiB → {page.inner_text('[data-testid=peak-bytes]')}"), delta
    expected = api_trace(live_server, after["spec"])
    assert int(page.get_attribute("[data-testid=peak-bytes]", "data-bytes")) == expected["summary"]["peak_bytes"]
    page.screenshot(path="test-artifacts/workspace-after-drag.png")

    # pin this run; two edits later the delta, the ghost and the table still compare against it
    page.get_by_test_id("pin-baseline").click()
    expect(page.get_by_test_id("compare-label")).to_have_text("baseline: no checkpointing, batch 256")
    expect(page.get_by_test_id("pin-baseline")).to_have_text("Unpin baseline")
    pinned_peak = after["summary"]["peak_bytes"]
    edit(page, "batch", 100, "t.spec.batch === 100")
    final = edit(page, "batch", 30, "t.spec.batch === 30")
    delta = page.inner_text("[data-testid=peak-delta]")
    assert delta.startswith("peak ") and f"→ {page.inner_text('[data-testid=peak-bytes]')}" in delta
    assert delta.split(" → ")[0] == f"peak {expected_peak_text(page, pinned_peak)}"
    before_total = int(page.get_attribute("[data-testid=saved-bytes-total] td.before", "data-bytes"))
    pinned_saved = sum(t["nbytes"] for t in {t["storage"]: t for t in expected["tensors"] if t["saved_by"] and t["scope"]}.values())
    assert before_total == pinned_saved
    see_chart(page, "memory-chart")
    names = page.evaluate("Array.from(document.querySelector('[data-testid=memory-chart]').data, d => d.name)")
    assert "baseline" in names and "previous run" not in names
    ghost = page.evaluate("document.querySelector('[data-testid=memory-chart]').data.find(d => d.name === 'baseline').y")
    assert ghost == [step["live_bytes"] for step in expected["steps"]]
    saved(page)
    assert session(page, live_server)["baseline"]["spec"]["batch"] == 256
    page.screenshot(path="test-artifacts/workspace-pinned.png")

    # the pin survives a reload
    page.reload()
    page.wait_for_selector(".explorer[data-ready=true]", timeout=30000)
    expect(page.get_by_test_id("compare-label")).to_have_text("baseline: no checkpointing, batch 256")
    assert page.evaluate("window.tapescope.getTrace().spec.batch") == final["spec"]["batch"]


@pytest.mark.parametrize("trace_seconds", [0, 1.0], ids=["prompt-server", "slow-server"])
def test_a_burst_of_arrow_presses_compares_with_where_it_started_and_is_one_undo(page, live_server, trace_seconds):
    """Three ArrowUp presses on batch (64 -> 67), each traced on its own: the delta once read 50.8 -> 51.5 KiB (the
    press before) rather than 49.3 -> 51.5 KiB (where the burst started), and each press was its own undo. On a slow
    server (each trace answered after a second, longer than the burst's pause) the person presses again when the
    last press's answer shows: still one burst (it once split there, on a busy machine)."""
    start = preset_trace(page, live_server, "seed-tape")
    open_explorer(page, live_server, "seed-tape")
    if trace_seconds:
        def slow(route):
            response = route.fetch()
            time.sleep(trace_seconds)
            route.fulfill(response=response)
        page.route("**/api/trace", slow)
    batch = field(page, "batch")
    batch.focus()
    for _ in range(3):
        count = page.evaluate("window.tapescope.traceCount()")
        batch.press("ArrowUp")
        traced_after(page, count)                     # each press traced: a run mid-burst is on screen
    after = traced_after(page, 0, "t.spec.batch === 67")
    saved(page)                                       # the burst settled: one history entry, saved
    delta = page.inner_text("[data-testid=peak-delta]")
    before = expected_peak_text(page, start["summary"]["peak_bytes"])
    assert delta.startswith(f"peak {before} → {expected_peak_text(page, after['summary']['peak_bytes'])}"), delta
    count = page.evaluate("window.tapescope.traceCount()")
    page.get_by_test_id("undo").click()
    traced_after(page, count, "t.spec.batch === 64")


def expected_peak_text(page, nbytes):
    """The page's own byte formatting (format.js), so the test compares words with words."""
    return page.evaluate("async n => (await import('/static/js/lib/format.js')).formatBytes(n)", nbytes)


def test_a_drag_past_the_cap_keeps_the_settled_model_and_compares_against_it(page, live_server):
    """deep-mlp's width dragged from 1 to ~1,100 (over the 256 MiB cap near 1,000): a trace made mid-drag at width 1
    once stayed as "the last good trace", and the delta read as if widening had cut memory."""
    open_explorer(page, live_server, "deep-mlp")
    settled = shown_trace(page)
    slider = page.locator("#editor-panel input[type=range]").nth(1)          # the memory dials: batch, then width
    low, high = float(slider.get_attribute("min")), float(slider.get_attribute("max"))
    path = slider.get_attribute("data-path")
    over_cap = []                                          # the widths the server refused as over a size cap
    page.on("response", lambda r: over_cap.append(r.request.post_data_json["spec"]) if r.url.endswith("/api/trace")
            and r.status == 413 else None)
    drag_slider(page, slider, low, 1100, low, high)        # traces land on the way when the machine keeps up
    expect(page.get_by_test_id("field-error").first).to_contain_text("cap")         # the cap, said at the field
    page.wait_for_timeout(800)                                                    # past the settle wait
    shown = shown_trace(page)
    assert shown["spec"] == settled["spec"], "a trace made mid-drag replaced the settled one"
    assert int(page.get_attribute("[data-testid=peak-bytes]", "data-bytes")) == settled["summary"]["peak_bytes"]
    delta = page.inner_text("[data-testid=peak-delta]")
    assert "→" not in delta or delta.count(expected_peak_text(page, settled["summary"]["peak_bytes"])) == 2, delta

    # the dial now marks where this model met the cap (the lowest width refused), and says so
    mark = page.locator(f"[data-testid=cap-mark][data-path='{path}']")
    expect(mark).to_be_visible()
    refused_at = int(mark.get_attribute("data-value"))
    widths = [spec["layers"][0]["layers"][0]["out"] for spec in over_cap]
    assert refused_at == min(widths) and refused_at > 1, (refused_at, widths)
    expect(mark).to_contain_text(f"over the cap at {refused_at:,}")
    assert "cap" in mark.get_attribute("title") and "MiB" in mark.get_attribute("title")
    track = slider.bounding_box()
    tick = mark.bounding_box()
    share = (refused_at - low) / (high - low)
    assert abs(tick["x"] - (track["x"] + share * track["width"])) < 12, (tick, track, share)
    page.screenshot(path="test-artifacts/workspace-cap-mark.png")
    field(page, "batch").fill("32")                   # another model (still over the cap at 4,096 wide): no mark
    expect(page.locator("[data-testid=cap-mark]")).to_have_count(0)
