"""The editor driven by GET /api/schema, and the layer knobs in a real browser: a cap changed in Python moves the
slider's max; freezing lowers the peak to the trace's figure; the version-error preset stops at its step."""
from playwright.sync_api import expect

from backend.models.caps import CAPS
from tests.e2e.explorer_helpers import go_to_step, open_explorer, shown_trace, trace_for


def editor_input(page, path, kind="number"):
    return page.locator(f'#editor-panel input[type={kind}][data-path="{path}"]')


def test_the_sliders_and_boxes_span_the_caps_set_in_python(page, live_server, monkeypatch):
    monkeypatch.setitem(CAPS, "batch", 777)
    monkeypatch.setitem(CAPS, "width", 333)
    open_explorer(page, live_server, "deep-mlp")
    expect(editor_input(page, "batch", "range")).to_have_attribute("max", "777")
    expect(editor_input(page, "batch")).to_have_attribute("max", "777")
    expect(editor_input(page, "layers[0].layers[0].out", "range")).to_have_attribute("max", "333")
    monkeypatch.setitem(CAPS, "batch", 2048)
    page.reload()
    page.wait_for_selector(".explorer[data-ready=true]")
    expect(editor_input(page, "batch", "range")).to_have_attribute("max", "2048")


def traced_after(page, count, condition="true"):
    page.wait_for_function(
        f"n => window.tapescope.traceCount() > n && document.querySelector('.explorer').dataset.ready === 'true'"
        f" && (t => {condition})(window.tapescope.getTrace())", arg=count, timeout=30000)
    return shown_trace(page)


def test_freezing_the_first_linear_of_deep_mlp_lowers_the_peak_to_the_traces_figure(page, live_server):
    open_explorer(page, live_server, "deep-mlp")
    before = int(page.get_attribute("[data-testid=peak-bytes]", "data-bytes"))
    count = page.evaluate("window.tapescope.traceCount()")
    frozen = editor_input(page, "layers[0].layers[0].frozen", "checkbox")
    expect(frozen).not_to_be_checked()
    frozen.check()
    trace = traced_after(page, count, "t.spec.layers[0].layers[0].frozen === true")
    expected = page.request.post(f"{live_server}/api/trace", data={"spec": trace["spec"]}).json()
    peak = int(page.get_attribute("[data-testid=peak-bytes]", "data-bytes"))
    assert peak == expected["summary"]["peak_bytes"] == trace["summary"]["peak_bytes"] < before
    # Every repeated linear shares the frozen flag: only the last linear's parameters get a gradient.
    assert [e["scope"] for e in trace["tape"] if e["phase"] == "forward"][0] == "layers[1]"
    page.screenshot(path="test-artifacts/layer-knobs-frozen.png")


def test_the_version_error_preset_stops_at_the_failing_step_with_the_engines_text(page, live_server):
    expected = trace_for(page, live_server, "version-error")["error"]
    open_explorer(page, live_server, "version-error")
    expect(page.get_by_test_id("trace-status")).to_contain_text(f"backward stopped at step {expected['step']}")
    assert page.get_attribute("[data-testid=scrub]", "max") == str(expected["step"])
    go_to_step(page, expected["step"])
    message = page.get_by_test_id("backward-error-message")
    expect(message).to_have_text(expected["message"])
    assert "is at version 1; expected version 0" in expected["message"]
    expect(page.get_by_test_id("backward-error-fix")).to_contain_text("out of place")
    page.screenshot(path="test-artifacts/layer-knobs-version-error.png")
    # Untick inplace: relu out of place, and the same model's backward runs to the end.
    count = page.evaluate("window.tapescope.traceCount()")
    editor_input(page, "layers[2].inplace", "checkbox").uncheck()
    trace = traced_after(page, count, "t.spec.layers[2].inplace === false")
    assert trace["error"] is None and trace["steps"][-1]["phase"] == "optimizer"
    expect(page.get_by_test_id("backward-error")).to_have_count(0)


def test_the_peak_explainer_sets_freezing_the_first_half_against_the_last_with_their_traced_peaks(page, live_server):
    from backend.models import presets, validate_spec
    from backend.models.freeze import freeze_half
    open_explorer(page, live_server, "deep-mlp")
    page.get_by_test_id("find-levers").click()
    compare = page.get_by_test_id("freeze-compare")
    expect(compare).to_be_visible(timeout=90000)
    spec = validate_spec(presets.get("deep-mlp"))
    peaks = [page.request.post(f"{live_server}/api/trace", data={"spec": freeze_half(spec, half)}).json()
             ["summary"]["peak_bytes"] for half in ("first", "last")]
    assert [int(b) for b in compare.locator("[data-bytes]").evaluate_all("ns => ns.map(n => n.dataset.bytes)")] == peaks
    assert peaks[0] < peaks[1]                   # a frozen prefix is left off the tape; a frozen suffix is not
    page.get_by_test_id("peak-explainer").screenshot(path="test-artifacts/layer-knobs-freeze-levers.png")
