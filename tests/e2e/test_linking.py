"""Selection is one thing everywhere: a lifetime bar selects its tensor's node in the graph and the inspector shows it;
a graph node outlines its output's lifetime bar; Escape clears the selection in every view."""
import re

import pytest
from playwright.sync_api import expect

from tests.e2e.explorer_helpers import open_explorer, see_chart, trace_for

OUTLINE = "[data-testid=lifetime-chart] .shapelayer path"


def outline_on(page, tensor_id):
    """The selection's outline is drawn: one rectangle on screen where the tensor's bar is."""
    expect(page.locator(OUTLINE)).to_have_count(1)
    drawn, bar = page.evaluate("""key => {
      const chart = document.querySelector('[data-testid=lifetime-chart]');
      const bar = chart.querySelectorAll('.bars .point')[chart.data[0].customdata.indexOf(key)];
      const box = (element) => { const r = element.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; };
      return [box(chart.querySelector('.shapelayer path')), box(bar)];
    }""", f"t{tensor_id}")
    assert drawn == pytest.approx(bar, abs=1), (drawn, bar)


def test_a_lifetime_bar_and_a_graph_node_select_each_other(page, live_server):
    trace = trace_for(page, live_server, "seed-tape")
    open_explorer(page, live_server, "seed-tape")
    saved = [t for t in trace["tensors"] if t["saved_by"]]
    tensor = next(t for t in saved if t["produced_by"] is not None)
    see_chart(page, "lifetime-chart")
    keys = page.evaluate("() => document.querySelector('[data-testid=lifetime-chart]').data[0].customdata")
    bar = page.locator("[data-testid=lifetime-chart] .bars .point").nth(keys.index(f"t{tensor['id']}"))
    bar.scroll_into_view_if_needed()
    box = bar.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)   # as a person clicks a Plotly bar
    expect(page.locator(".explorer")).to_have_attribute("data-selected", f"t{tensor['id']}")
    outline_on(page, tensor['id'])
    node = page.locator(f"[data-testid=graph] [data-node-id='{tensor['produced_by']}']")
    expect(node).to_have_class(re.compile(r"\bselected\b"))
    expect(page.locator("#inspector")).to_contain_text(tensor["name"])

    page.keyboard.press("Escape")
    expect(page.locator(".explorer")).to_have_attribute("data-selected", "")
    expect(page.locator("[data-testid=graph] .node.selected")).to_have_count(0)
    expect(page.get_by_test_id("lifetime-chart")).to_have_attribute("data-selected-tensor", "")
    expect(page.locator(OUTLINE)).to_have_count(0)

    producer = trace["tape"][tensor["produced_by"]]
    node.scroll_into_view_if_needed()
    node.locator("rect").first.click()
    expect(page.locator(".explorer")).to_have_attribute("data-selected", f"e{producer['index']}")
    expect(see_chart(page, "lifetime-chart")).to_have_attribute("data-selected-tensor", str(producer["output"]))
    outline_on(page, producer["output"])
