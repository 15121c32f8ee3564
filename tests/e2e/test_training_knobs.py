"""The training-step knobs in a real browser: accumulate 4 draws four forward humps in the memory chart (from the
editor and from the grad-accumulation preset); float16 with a dynamic loss scale shows each gradient's underflow
fractions in the inspector, the trace's figures."""
import re

from playwright.sync_api import expect

from tests.e2e.explorer_helpers import go_to_step, open_explorer, see_chart, shown_trace, trace_for, unfold_all

FORWARD_LABELS = "[data-testid=memory-chart] .annotation-text"


def forward_labels(page):
    """The labels over the forward passes of the memory chart, as plotted for the run shown."""
    see_chart(page, "memory-chart")
    return [text for text in page.locator(FORWARD_LABELS).all_text_contents() if text.startswith("forward")]


def test_accumulate_4_in_the_editor_draws_four_forward_phases_and_lowers_the_peak(page, live_server):
    open_explorer(page, live_server, "deep-mlp")
    before = page.evaluate("window.tapescope.getTrace().summary.peak_bytes")
    assert forward_labels(page) == []
    box = page.locator('#editor-panel input[type=number][data-path="accumulate"]')
    box.fill("4")
    page.wait_for_function("() => window.tapescope.getTrace().summary.micro_batches === 4"
                           " && document.querySelector('.explorer').dataset.ready === 'true'")
    assert forward_labels(page) == ["forward 1", "forward 2", "forward 3", "forward 4"]
    trace = shown_trace(page)
    assert trace["summary"]["peak_bytes"] < before
    micro = sorted({s["micro_batch"] for s in trace["steps"] if s["phase"] == "forward"})
    assert micro == [1, 2, 3, 4]
    expect(page.get_by_test_id("resident-split")).to_contain_text("4 micro-batches of 64 rows, one step.")


def test_the_grad_accumulation_preset_is_one_click_away(page, live_server):
    open_explorer(page, live_server, "grad-accumulation")
    assert forward_labels(page) == ["forward 1", "forward 2", "forward 3", "forward 4"]


def test_float16_with_dynamic_scaling_shows_the_underflow_fractions(page, live_server):
    trace = trace_for(page, live_server, "mixed-precision")
    assert trace["spec"]["precision"] == {"compute": "float16", "loss_scale": "dynamic", "growth_interval": 2000}
    grads = [t for t in trace["tensors"] if t.get("underflow")]
    worst = max(grads, key=lambda t: t["underflow"]["unscaled"])
    assert worst["underflow"]["unscaled"] > worst["underflow"]["scaled"]
    param = next(t for t in trace["tensors"] if t["id"] == worst["grad_of"])
    open_explorer(page, live_server, "mixed-precision")
    unfold_all(page)
    search = page.get_by_test_id("graph-search")             # find the weight, Enter zooms to it, as a person would
    search.fill(param["name"])
    search.press("Enter")
    leaf = page.locator(f"[data-testid=graph] [data-tensor-id='{param['id']}']").first
    leaf.scroll_into_view_if_needed()
    page.wait_for_timeout(600)                               # the zoom's transition
    leaf.click()
    block = page.get_by_test_id("underflow")
    expect(block).to_be_visible()
    unscaled = f"{100 * worst['underflow']['unscaled']:.1f}%"
    scaled = f"{100 * worst['underflow']['scaled']:.1f}%"
    expect(page.get_by_test_id("underflow-selected")).to_contain_text(
        f"{worst['name']}: {unscaled} of its elements become 0 in float16 without the loss scale, {scaled} with it (×65,536)")
    expect(block.locator("tbody tr")).to_have_count(len(grads))
    resident = trace["summary"]["resident"]
    assert resident["bytes_per_param"] == 16.0
    assert resident["weight_copies_bytes"] > 0
    expect(page.get_by_test_id("resident-split")).to_contain_text(re.compile(r"float16 copies up to [\d.]+ KiB"))
    expect(page.get_by_test_id("resident-split")).to_contain_text("16 B per parameter")
    expect(page.get_by_test_id("resident-split")).to_contain_text("Loss scale 65,536.")


def test_a_fixed_loss_scale_is_set_in_the_form_within_the_schemas_range(page, live_server):
    scale = next(f for f in page.request.get(f"{live_server}/api/schema").json()["precision"]["options"]["float16"]["fields"]
                 if f["name"] == "loss_scale")
    open_explorer(page, live_server, "mixed-precision")
    field = page.locator('#editor-panel .training-fields [data-field="precision.loss_scale"]')
    choice = field.locator('select[data-choice-of="precision.loss_scale"]')
    box = field.locator('input[type=number][data-path="precision.loss_scale"]')
    expect(choice).to_have_value("dynamic")
    expect(box).to_be_hidden()
    assert field.get_attribute("title").startswith(scale["help"])
    assert f"{scale['number_max']:,.0f}" in field.get_attribute("title")

    choice.select_option("number")                            # the schema's start: the dynamic policy's 2¹⁶, fixed
    expect(box).to_be_visible()
    expect(box).to_have_value(f"{scale['number_default']:.0f}")
    assert (box.get_attribute("min"), box.get_attribute("max")) == ("1", f"{scale['number_max']:.0f}")
    box.fill("1024")
    page.wait_for_function("() => window.tapescope.getTrace().summary.loss_scale.scale === 1024"
                           " && document.querySelector('.explorer').dataset.ready === 'true'")
    trace = shown_trace(page)
    assert trace["spec"]["precision"]["loss_scale"] == 1024
    assert trace["summary"]["loss_scale"]["mode"] == "fixed" and trace["summary"]["loss_scale"]["next_scale"] == 1024
    expect(page.get_by_test_id("resident-split")).to_contain_text("Loss scale 1,024.")

    box.fill(str(int(scale["number_max"]) * 2))               # over the range: the server's problem at the field
    expect(field.locator("xpath=following-sibling::*[@data-testid='field-error'][1]")).to_contain_text(
        f"a number from 1 to {scale['number_max']:,.0f}")
    assert page.evaluate("window.tapescope.getTrace().summary.loss_scale.scale") == 1024     # the last good trace

    choice.select_option("none")
    expect(box).to_be_hidden()
    page.wait_for_function("() => window.tapescope.getTrace().summary.loss_scale.mode === 'none'"
                           " && document.querySelector('.explorer').dataset.ready === 'true'")


def test_mixed_precision_opens_on_autocasts_cast_of_x_and_the_sweep_panel_says_so(page, live_server):
    open_explorer(page, live_server, "mixed-precision")
    trace = shown_trace(page)
    assert trace["steps"][0]["autocast"] == "float16" and trace["steps"][0]["entry"] is None
    go_to_step(page, 1)
    go_to_step(page, 0)                                      # the step the preset opens on
    sweep = page.get_by_test_id("sweep")
    expect(sweep.get_by_test_id("autocast-cast")).to_contain_text(
        "Autocast casting an input to float16 without the tape")
    expect(sweep.get_by_test_id("autocast-cast")).to_contain_text("this one needs no gradient (the input x")
    expect(sweep).not_to_contain_text("before the first parameter")       # not the frozen prefix's sentence
    expect(sweep.get_by_test_id("unrecorded")).to_have_count(0)
    go_to_step(page, 1)                                      # the weight's cast is a tape entry, recorded
    expect(sweep).to_contain_text("Recording cast")
    expect(sweep.get_by_test_id("autocast-cast")).to_have_count(0)
