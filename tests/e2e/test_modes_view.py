"""Forward vs reverse in a real browser: the matrix-chain panel's counts for the default widths, the view's sweep
counts equal the model's input and output sizes, and stepping the JVP sweep moves the graph's highlight."""
from pathlib import Path

import pytest
from playwright.sync_api import expect

from backend.models.presets import PRESETS
from tests.e2e.explorer_helpers import open_explorer, presets, shown_trace

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def selected_node_ids(page):
    return page.eval_on_selector_all("[data-testid=graph] .node.selected", "nodes => nodes.map(n => n.dataset.nodeId)")


def open_modes(page, live_server, preset_id):
    open_explorer(page, live_server, preset_id)
    view = page.get_by_test_id("modes-view")
    view.scroll_into_view_if_needed()
    expect(view).to_have_attribute("data-state", "ready", timeout=60_000)
    return view


def test_the_matrix_chain_panel_shows_the_seeds_counts_for_the_default_widths(page, live_server):
    open_explorer(page, live_server, "seed-tape")
    panel = page.get_by_test_id("matrix-chain")
    panel.scroll_into_view_if_needed()
    expect(page.get_by_test_id("chain-reverse-cost")).to_have_text("33,554,432")
    expect(page.get_by_test_id("chain-forward-cost")).to_have_text("68,736,253,952")
    expect(panel.locator(".chain-reverse")).to_have_class("chain-reverse cheaper")     # the reverse grouping lit
    expect(page.get_by_test_id("chain-executed-reverse")).to_contain_text("8,192 multiply-adds measured")
    expect(page.get_by_test_id("chain-executed-forward")).to_contain_text("266,240 multiply-adds measured")
    page.get_by_test_id("chain-n0").fill("1")            # one input, many outputs: forward mode wins
    page.get_by_test_id("chain-n3").fill("4096")
    expect(panel.locator(".chain-forward")).to_have_class("chain-forward cheaper")
    expect(page.get_by_test_id("chain-forward-cost")).to_have_text("33,554,432")


def test_the_views_sweep_counts_are_the_models_input_and_output_sizes(page, live_server):
    for preset_id in ("seed-tape", "residual-unit"):
        spec = presets(page, live_server)[preset_id]["spec"]
        view = open_modes(page, live_server, preset_id)
        inputs = spec["batch"] * spec["input"]["size"]
        outputs = spec["batch"] * spec["layers"][-1]["out"] if spec["layers"][-1]["type"] == "linear" else None
        if outputs is None:                                  # residual-unit ends in a residual of width 8
            outputs = spec["batch"] * spec["layers"][-1]["layers"][-1]["out"]
        forward = view.locator("[data-testid=modes-forward-sweeps]")
        reverse = view.locator("[data-testid=modes-reverse-sweeps]")
        expect(forward.and_(page.locator("[data-jacobian=loss]"))).to_have_text(f"{inputs:,}")
        expect(reverse.and_(page.locator("[data-jacobian=loss]"))).to_have_text("1")
        expect(forward.and_(page.locator("[data-jacobian=logits]"))).to_have_text(f"{inputs:,}")
        expect(reverse.and_(page.locator("[data-jacobian=logits]"))).to_have_text(f"{outputs:,}")
        expect(view).to_contain_text("Reverse mode wins for a scalar loss")


def test_stepping_the_jvp_sweep_moves_the_highlight(page, live_server):
    view = open_modes(page, live_server, "seed-tape")
    trace = shown_trace(page)
    forward_entries = [e for e in trace["tape"] if e["phase"] == "forward"]
    stepper = page.get_by_test_id("jvp-stepper")
    expect(stepper).to_be_visible()
    seen = []
    for step in range(len(forward_entries)):
        if step:
            page.get_by_test_id("jvp-step-forward").click()
        else:
            page.get_by_test_id("jvp-step-forward").click()
            page.get_by_test_id("jvp-step-back").click()
        expect(stepper).to_have_attribute("data-step", str(step))
        entry = forward_entries[step]
        expect(page.get_by_test_id("jvp-step-op")).to_contain_text(f"{entry['op']} — tape entry {entry['index']}")
        expect(page.get_by_test_id("jvp-tangent")).to_contain_text("‖·‖")
        page.wait_for_function("id => window.tapescope.getSelected() === id", arg=f"e{entry['index']}")
        seen.append(selected_node_ids(page))
    assert seen == [[str(e["index"])] for e in forward_entries]              # one lit node per step, moving forward
    expect(page.get_by_test_id("jvp-step-op")).to_contain_text("sum")
    ARTIFACTS.mkdir(exist_ok=True)
    for width, height in ((1280, 800), (1920, 1080)):
        page.set_viewport_size({"width": width, "height": height})
        view.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"modes-view-{width}.png"), full_page=False)
        view.screenshot(path=str(ARTIFACTS / f"modes-panel-{width}.png"))


def test_an_input_element_out_of_range_is_refused_in_words_and_the_sweep_stays(page, live_server):
    open_modes(page, live_server, "seed-tape")
    element = page.get_by_test_id("jvp-element")
    direction = page.get_by_test_id("jvp-direction").text_content()
    elements = int(element.get_attribute("max")) + 1
    element.fill("9999")
    element.dispatch_event("change")
    refusal = page.get_by_test_id("jvp-element-error")
    expect(refusal).to_be_visible()
    expect(refusal).to_contain_text('"9999" is not an input element here')
    expect(refusal).to_contain_text(f"numbered 0 to {elements - 1:,}")
    expect(element).to_have_value("0")
    assert page.get_by_test_id("jvp-direction").text_content() == direction

    element.fill(str(elements - 1))                 # the last element is in range: the sweep follows it
    element.dispatch_event("change")
    expect(refusal).to_be_hidden()
    expect(page.get_by_test_id("jvp-direction")).to_contain_text(f"e{elements - 1}:")


def test_a_model_over_the_work_cap_runs_on_a_named_slice(page, live_server):
    open_explorer(page, live_server, "deep-mlp")                 # 4,096 input elements: 8,192 JVP sweeps
    view = page.get_by_test_id("modes-view")
    view.scroll_into_view_if_needed()
    expect(view).to_have_attribute("data-state", "ready", timeout=60_000)
    expect(view).to_have_attribute("data-sliced", "true")
    expect(view.locator(".modes-status")).to_contain_text("A slice: the whole batch's 4,096 input elements")
    expect(view.locator(".modes-status")).to_contain_text("none extrapolated")


@pytest.mark.parametrize("preset_id", list(PRESETS))
def test_the_modes_panel_shows_executed_figures_on_every_preset_but_version_error_which_says_why(page, live_server,
                                                                                                 preset_id):
    assert preset_id in presets(page, live_server)
    open_explorer(page, live_server, preset_id)
    view = page.get_by_test_id("modes-view")
    view.scroll_into_view_if_needed()
    if preset_id == "version-error":
        expect(view).to_have_attribute("data-state", "failed", timeout=60_000)
        expect(view.locator(".modes-status")).to_contain_text("version error")
        return
    expect(view).to_have_attribute("data-state", "ready", timeout=60_000)
    sweeps = view.locator("[data-testid$=-sweeps][data-jacobian]").all_inner_texts()   # forward and reverse, both Jacobians
    assert len(sweeps) == 4 and all(int(text.replace(",", "")) >= 1 for text in sweeps), sweeps
    expect(view.locator(".modes-status")).to_contain_text("Executed on")
