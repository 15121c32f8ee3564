"""The model editor in a real browser: edits re-trace, problems sit at their fields, undo, names as text.

Each test starts from a preset chosen in the explorer, edits through the editor panel and waits for the
explorer to show the trace the workspace got (window.tapescope.traceCount()); numbers are checked against the API.
"""
import json
from pathlib import Path
from urllib.request import Request, urlopen

import pytest
from playwright.sync_api import expect

from backend.trace.document_versions import unpack
from tests.e2e.explorer_helpers import see_chart, shown_trace

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
XSS = "<img src=x onerror=alert(1)>"


def api_trace(base, spec):
    request = Request(f"{base}/api/trace", data=json.dumps({"spec": spec}).encode(),
                      headers={"Content-Type": "application/json"}, method="POST")
    with urlopen(request) as response:
        return unpack(json.load(response))


def saved_by_layer(trace):
    """Saved bytes per top-level layer, each storage once: the editor's table computed independently."""
    totals, seen = {}, set()
    for tensor in trace["tensors"]:
        if not tensor["saved_by"] or not tensor["scope"] or tensor["storage"] in seen:
            continue
        seen.add(tensor["storage"])
        key = tensor["scope"].split(".")[0]
        totals[key] = totals.get(key, 0) + tensor["nbytes"]
    return totals


@pytest.fixture
def editor(page, live_server):
    """The explorer with the editor, errors and dialogs recorded; `open(preset)` loads a preset into both."""
    page.set_viewport_size({"width": 1400, "height": 1000})
    problems, dialogs = [], []
    page.on("pageerror", lambda error: problems.append(str(error)))
    expected_failures = ("/favicon.ico", "/api/trace")     # 400/413 answers are part of these tests
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" and not (
        "Failed to load resource" in m.text and m.location.get("url", "").endswith(expected_failures)) else None)
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(live_server + "/")
    page.wait_for_selector(".explorer[data-ready=true]", timeout=30000)

    class Editor:
        def __init__(self):
            self.page, self.problems, self.dialogs = page, problems, dialogs

        def open(self, preset):
            page.select_option("[data-testid=preset]", preset)
            page.wait_for_function(
                """name => window.tapescope.getTrace()?.spec.name === name
                   && document.querySelector('.explorer').dataset.ready === 'true'
                   && JSON.parse(document.querySelector('[data-testid=spec-json]').value).name === name""",
                arg=preset, timeout=30000)

        def traces(self):
            return page.evaluate("window.tapescope.traceCount()")

        def wait_traced(self, before):
            """Wait until the editor dispatched a trace after `before` and the explorer finished showing it."""
            page.wait_for_function(
                "n => window.tapescope.traceCount() > n && document.querySelector('.explorer').dataset.ready === 'true'",
                arg=before, timeout=30000)
            return shown_trace(page)

        def field(self, path):
            return page.locator(f'#editor-panel .editor-form [data-field="{path}"] > [data-path="{path}"]')

        def bytes_of(self, testid):
            return int(page.get_by_test_id(testid).get_attribute("data-bytes"))

        def shot(self, name, show=None):
            ARTIFACTS.mkdir(exist_ok=True)
            if show is not None:
                show.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / f"editor-{name}.png"))

    yield Editor()
    assert not dialogs, dialogs
    assert not problems, problems


def test_doubling_batch_doubles_saved_activation_bytes(editor, live_server):
    editor.open("lab1-mlp")
    total = editor.page.get_by_test_id("saved-bytes-total")
    before = saved_by_layer(shown_trace(editor.page))
    expect(total.locator("td.now")).to_have_attribute("data-bytes", str(sum(before.values())))

    n = editor.traces()
    editor.field("batch").fill("128")
    trace = editor.wait_traced(n)
    assert trace["spec"]["batch"] == 128

    spec = json.loads(editor.page.get_by_test_id("spec-json").input_value())
    assert spec["batch"] == 128
    expected = saved_by_layer(api_trace(live_server, spec))
    assert expected == saved_by_layer(trace)
    assert sum(expected.values()) == 2 * sum(before.values())
    expect(total.locator("td.now")).to_have_attribute("data-bytes", str(sum(expected.values())))
    expect(total.locator("td.before")).to_have_attribute("data-bytes", str(sum(before.values())))
    for layer, nbytes in expected.items():
        row = editor.page.locator(f'[data-testid=saved-bytes-table] tr[data-layer="{layer}"]')
        expect(row.locator("td.now")).to_have_attribute("data-bytes", str(nbytes))
        expect(row.locator("td.before")).to_have_attribute("data-bytes", str(before[layer]))
    expect(editor.page.get_by_test_id("peak-bytes")).to_have_attribute("data-bytes", str(trace["summary"]["peak_bytes"]))
    expect(editor.page.get_by_test_id("peak-delta")).to_contain_text("→")
    editor.shot("lab1-batch", total)


def test_efficient_attention_lowers_peak_and_table_shows_where(editor):
    editor.open("transformer-tiny")
    old_peak = editor.bytes_of("peak-bytes")
    n = editor.traces()
    editor.field("layers[1].impl").select_option("efficient")
    editor.field("layers[2].impl").select_option("efficient")
    trace = editor.wait_traced(n)
    editor.page.wait_for_function("() => window.tapescope.getTrace().spec.layers[2].impl === 'efficient'")
    trace = shown_trace(editor.page)
    assert trace["summary"]["peak_bytes"] < old_peak
    expect(editor.page.get_by_test_id("peak-bytes")).to_have_attribute("data-bytes", str(trace["summary"]["peak_bytes"]))
    table = editor.page.get_by_test_id("saved-bytes-table")
    for layer in ("layers[1]", "layers[2]"):
        delta = int(table.locator(f'tr[data-layer="{layer}"] td.delta').get_attribute("data-bytes"))
        assert delta < 0, (layer, delta)
        expect(table.locator(f'tr[data-layer="{layer}"]')).to_have_class("changed")
    for layer in ("layers[0]", "layers[3]", "layers[4]"):
        expect(table.locator(f'tr[data-layer="{layer}"] td.delta')).to_have_attribute("data-bytes", "0")
    editor.shot("efficient", table)


def test_adding_a_layer_adds_graph_nodes_and_a_linear_keeps_the_width(editor):
    editor.open("lab1-mlp")
    nodes = editor.page.locator("[data-testid=graph] [data-node-id]")
    before = nodes.count()
    assert before == editor.page.evaluate("window.tapescope.getTrace().tape.length")
    n = editor.traces()
    editor.page.get_by_label("type of the layer to add to layers", exact=True).select_option("tanh")
    editor.page.get_by_role("button", name="Add layer to layers", exact=True).click()
    trace = editor.wait_traced(n)
    assert [layer["type"] for layer in trace["spec"]["layers"]][-1] == "tanh"
    expect(nodes).to_have_count(len(trace["tape"]))
    assert nodes.count() > before
    # a linear keeps the width it comes after (out=1: lab1-mlp's x² target needs it), so the model still traces
    n = editor.traces()
    editor.page.get_by_label("type of the layer to add to layers", exact=True).select_option("linear")
    editor.page.get_by_role("button", name="Add layer to layers", exact=True).click()
    trace = editor.wait_traced(n)
    assert trace["spec"]["layers"][-1] == {"type": "linear", "out": 1, "bias": True}, trace["spec"]["layers"][-1]


def test_out_of_zero_shows_field_error_and_keeps_the_graph(editor):
    editor.open("lab1-mlp")
    nodes = editor.page.locator("[data-testid=graph] [data-node-id]")
    before = nodes.count()
    editor.field("layers[0].out").fill("0")
    error = editor.page.locator('li[data-layer="layers[0]"] [data-testid=field-error]')
    expect(error).to_be_visible()
    expect(error).to_contain_text("layers[0].out")
    expect(error).to_contain_text("must be")
    expect(editor.field("layers[0].out")).to_have_attribute("aria-invalid", "true")
    assert editor.page.evaluate("window.tapescope.getTrace().spec.layers[0].out") == 64
    expect(nodes).to_have_count(before)
    expect(editor.page.get_by_test_id("trace-status")).to_contain_text("last good trace")
    editor.shot("field-error")

    # fixing the field clears the error and traces again
    n = editor.traces()
    editor.field("layers[0].out").fill("32")
    editor.wait_traced(n)
    expect(editor.page.get_by_test_id("field-error")).to_have_count(0)


def test_spec_over_the_byte_cap_names_the_cap(editor):
    editor.open("lab1-mlp")
    peak = editor.bytes_of("peak-bytes")
    editor.page.get_by_test_id("json-tab").click()
    big = {"name": "too-big", "batch": 1024, "input": {"kind": "features", "size": 1},
           "layers": [{"type": "repeat", "times": 64, "layers": [{"type": "linear", "out": 1024}, {"type": "tanh"}]}]}
    editor.page.get_by_test_id("spec-json").fill(json.dumps(big, indent=2))
    editor.page.get_by_test_id("apply").click()
    editor.page.get_by_role("tab", name="Form").click()
    error = editor.page.get_by_test_id("field-error")
    expect(error).to_have_count(1)
    expect(error).to_contain_text("total bytes (256 MiB) cap")
    expect(error).to_contain_text("1.5 GiB")
    expect(error).to_contain_text("over (6.0×)")
    assert editor.bytes_of("peak-bytes") == peak
    editor.shot("cap")

    # a JSON syntax error is shown, nothing else happens
    editor.page.get_by_test_id("json-tab").click()
    editor.page.get_by_test_id("spec-json").fill('{"batch": 2,')
    editor.page.get_by_test_id("apply").click()
    expect(editor.page.locator(".editor-json [data-testid=field-error]")).to_contain_text("JSON")


def test_unapplied_json_survives_a_tab_switch_and_a_form_edit_until_applied_or_discarded(editor):
    editor.open("lab1-mlp")
    page = editor.page
    page.get_by_test_id("json-tab").click()
    typed = page.get_by_test_id("spec-json").input_value().replace('"batch": 64', '"batch": 48')
    page.get_by_test_id("spec-json").fill(typed)
    unapplied = page.get_by_test_id("json-unapplied")
    expect(unapplied).to_be_visible()
    expect(unapplied).to_contain_text("Unapplied")

    page.get_by_role("tab", name="Form").click()
    n = editor.traces()
    editor.field("layers[0].out").fill("32")           # the model changes under the typed text
    editor.wait_traced(n)
    page.get_by_test_id("json-tab").click()
    expect(page.get_by_test_id("spec-json")).to_have_value(typed)
    expect(unapplied).to_be_visible()

    n = editor.traces()
    page.get_by_test_id("apply").click()               # the typed text is the model now: batch 48, out 64 again
    editor.wait_traced(n)
    expect(unapplied).to_be_hidden()
    expect(editor.field("batch")).to_have_value("48")
    assert json.loads(page.get_by_test_id("spec-json").input_value())["layers"][0]["out"] == 64

    page.get_by_test_id("spec-json").fill('{"batch": 2,')
    expect(unapplied).to_be_visible()
    page.get_by_test_id("json-discard").click()
    expect(unapplied).to_be_hidden()
    assert json.loads(page.get_by_test_id("spec-json").input_value())["batch"] == 48


def test_undo_restores_previous_spec_and_peak(editor):
    editor.open("lab1-mlp")
    peak = editor.bytes_of("peak-bytes")
    undo, redo = editor.page.get_by_test_id("undo"), editor.page.get_by_test_id("redo")

    n = editor.traces()
    editor.field("batch").fill("200")
    editor.wait_traced(n)
    bigger = editor.bytes_of("peak-bytes")
    assert bigger > peak
    editor.field("layers[0].out").fill("0")          # a bad edit: not a history entry
    expect(editor.page.get_by_test_id("field-error")).to_have_count(1)

    n = editor.traces()
    undo.click()                                       # back to the last good spec
    editor.wait_traced(n)
    expect(editor.page.get_by_test_id("field-error")).to_have_count(0)
    expect(editor.field("layers[0].out")).to_have_value("64")
    assert editor.bytes_of("peak-bytes") == bigger

    n = editor.traces()
    undo.click()                                       # back to the preset
    editor.wait_traced(n)
    assert json.loads(editor.page.get_by_test_id("spec-json").input_value())["batch"] == 64
    expect(editor.field("batch")).to_have_value("64")
    expect(editor.page.get_by_test_id("peak-bytes")).to_have_attribute("data-bytes", str(peak))

    n = editor.traces()
    editor.page.locator("h1, .step-label, body").first.click()
    editor.page.keyboard.press("Control+Shift+Z")      # redo from the keyboard
    editor.wait_traced(n)
    expect(editor.page.get_by_test_id("peak-bytes")).to_have_attribute("data-bytes", str(bigger))
    expect(redo).to_be_disabled()


def test_layer_name_renders_as_text(editor):
    editor.open("lab1-mlp")
    n = editor.traces()
    editor.field("layers[0].name").fill(XSS)
    trace = editor.wait_traced(n)
    assert trace["spec"]["layers"][0]["name"] == XSS
    row = editor.page.locator('[data-testid=saved-bytes-table] tr[data-layer="layers[0]"]')
    expect(row).to_contain_text(XSS)
    # reload the form from the JSON so the name goes through every rendering path
    editor.page.get_by_test_id("json-tab").click()
    assert json.loads(editor.page.get_by_test_id("spec-json").input_value())["layers"][0]["name"] == XSS
    editor.page.get_by_test_id("apply").click()
    editor.page.get_by_role("tab", name="Form").click()
    expect(editor.field("layers[0].name")).to_have_value(XSS)
    editor.page.wait_for_timeout(300)
    assert editor.page.locator("img").count() == 0
    assert editor.page.evaluate("document.querySelectorAll('img').length") == 0
    editor.shot("name-as-text", row)


def chart_optimizer_bytes(page):
    """The memory chart's "optimizer" band, step by step, as Plotly drew it for the run shown."""
    see_chart(page, "memory-chart")
    return page.evaluate("""() => document.querySelector('[data-testid=memory-chart]').data
        .find((series) => series.name === 'optimizer').y""")


def test_adamw_and_sgd_momentum_show_their_state_as_optimizer_memory(editor):
    editor.page.set_viewport_size({"width": 1280, "height": 800})
    editor.open("lab1-mlp")                      # SGD without momentum: no optimizer state
    trace = shown_trace(editor.page)
    param_bytes = sum(s["nbytes"] for s in trace["storages"] if s["kind"] == "param")
    assert param_bytes == (64 + 64 + 64) * 8
    assert max(chart_optimizer_bytes(editor.page)) == 0
    expect(editor.page.get_by_test_id("optimizer-state")).to_contain_text("unless momentum > 0")

    n = editor.traces()
    editor.field("optimizer.type").select_option("adamw")
    trace = editor.wait_traced(n)
    assert trace["spec"]["optimizer"] == {"type": "adamw", "lr": 0.1, "betas": [0.9, 0.999], "weight_decay": 0.01}
    for path, value in (("optimizer.lr", "0.1"), ("optimizer.betas[0]", "0.9"), ("optimizer.betas[1]", "0.999"),
                        ("optimizer.weight_decay", "0.01")):
        expect(editor.field(path)).to_have_value(value)
    expect(editor.page.get_by_test_id("optimizer-state")).to_contain_text("m and v")
    optimizer = chart_optimizer_bytes(editor.page)
    assert optimizer == [step["by_kind"]["optimizer"] for step in trace["steps"]]
    assert optimizer[-1] == 2 * param_bytes      # m and v for each of the three parameters
    names = sorted(t["name"] for t in trace["tensors"] if t["kind"] == "optimizer")
    assert names == sorted(f"{p}.{s}" for p in ("layers[0].weight", "layers[0].bias", "layers[2].weight") for s in "mv")
    editor.page.get_by_role("button", name="Jump to the last step").click()
    expect(editor.page.get_by_test_id("live-bytes")).to_have_attribute("data-bytes", str(trace["steps"][-1]["live_bytes"]))
    born = editor.page.get_by_test_id("optimizer-state-born")      # the sweep panel at the last parameter's step
    expect(born).to_contain_text("layers[2].weight.m, layers[2].weight.v (1.0 KiB)")
    editor.shot("adamw", editor.page.locator("#editor-panel fieldset.optimizer-fields"))

    # a β₂ of 1 is refused at its own input, with what to do; the last good trace stays
    editor.field("optimizer.betas[1]").fill("1")
    error = editor.page.locator("#editor-panel [data-testid=field-error]")
    expect(error).to_contain_text("optimizer.betas[1]")
    expect(error).to_contain_text("must be a number from 0, below 1")
    expect(editor.field("optimizer.betas[1]")).to_have_attribute("aria-invalid", "true")
    n = editor.traces()
    editor.field("optimizer.betas[1]").fill("0.99")
    trace = editor.wait_traced(n)
    assert trace["spec"]["optimizer"]["betas"] == [0.9, 0.99]

    # SGD with momentum: one buffer per parameter
    n = editor.traces()
    editor.field("optimizer.type").select_option("sgd")
    editor.wait_traced(n)
    n = editor.traces()
    editor.field("optimizer.momentum").fill("0.9")
    trace = editor.wait_traced(n)
    assert trace["spec"]["optimizer"] == {"type": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.0,
                                          "nesterov": False}
    optimizer = chart_optimizer_bytes(editor.page)
    assert optimizer == [step["by_kind"]["optimizer"] for step in trace["steps"]]
    assert optimizer[-1] == param_bytes
    editor.shot("sgd-momentum", editor.page.locator("#editor-panel fieldset.optimizer-fields"))


def test_the_gradient_penalty_is_drawn_from_the_schema_and_edits_like_any_field(editor, live_server):
    editor.open("gradient-penalty")
    switch = editor.field("loss.gradient_penalty")
    expect(switch).to_be_checked()
    expect(editor.field("loss.gradient_penalty.weight")).to_have_value("10")
    n = editor.traces()
    editor.field("loss.gradient_penalty.weight").fill("2.5")
    trace = editor.wait_traced(n)
    assert trace["spec"]["loss"]["gradient_penalty"] == {"weight": 2.5}
    assert trace["summary"]["peak_bytes"] == api_trace(live_server, trace["spec"])["summary"]["peak_bytes"]

    n = editor.traces()
    switch.uncheck()                                    # off: the plain loss, one backward, a lower peak
    plain = editor.wait_traced(n)
    assert "gradient_penalty" not in plain["spec"]["loss"]
    assert plain["summary"]["peak_bytes"] < trace["summary"]["peak_bytes"]
    expect(editor.field("loss.gradient_penalty.weight")).to_have_count(0)

    n = editor.traces()
    editor.field("loss.gradient_penalty").check()        # on again: the declared default weight
    again = editor.wait_traced(n)
    assert again["spec"]["loss"]["gradient_penalty"] == {"weight": 10.0}
