"""The explorer opens graph first: the charts' library (Plotly, 4.8 MB) runs only after the graph is drawn, and a chart
is plotted only once it is on screen, so with Plotly held back the graph, the player, the sweep panel and the inspector
already work; once it arrives a chart scrolled to is drawn at the step the person moved to; if it never does, the
status line says so and the graph still works."""
from playwright.sync_api import expect

from tests.e2e.explorer_helpers import live_bytes, see_chart, trace_for

PLOTLY = "**/vendor/plotly.min.js"
EXPLORER = ".explorer"


def open_without_waiting_for_plotly(page, live_server):
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server}/", wait_until="domcontentloaded")     # held, Plotly's request would hold the load event
    page.wait_for_selector(".explorer[data-interactive=true]")


def test_the_graph_player_and_inspector_work_while_plotly_is_held_back(page, live_server):
    trace = trace_for(page, live_server, "seed-tape")
    x = next(t for t in trace["tensors"] if t["name"] == "x")
    held = []
    page.route(PLOTLY, lambda route: held.append(route))
    open_without_waiting_for_plotly(page, live_server)
    assert page.evaluate("typeof window.Plotly") == "undefined"
    assert page.locator("[data-testid=graph] .node").count() == len(trace["tape"]) + len(trace["graph"]["leaves"])

    page.click(f"[data-testid=graph] [data-tensor-id='{x['id']}']")
    expect(page.locator("#inspector")).to_contain_text(x["address"])
    for _ in range(3):
        page.get_by_test_id("step-forward").click()
    assert page.evaluate("window.tapescope.getStep()") == 3
    assert live_bytes(page) == trace["steps"][3]["live_bytes"]
    assert page.locator("[data-testid=graph] .node.current").count() == 1
    expect(page.locator("#inspector")).to_contain_text("at step 3")
    memory = page.get_by_test_id("memory-chart")
    memory.scroll_into_view_if_needed()                                   # scrolled to, it waits for Plotly
    expect(memory).to_have_attribute("data-drawn", "false")
    assert memory.locator(".main-svg").count() == 0                       # no chart yet

    # fetched ahead (the prefetch), and asked for again by the chart that needs it (a routed page has no HTTP cache)
    assert held and all(route.request.url.endswith("/vendor/plotly.min.js") for route in held)
    page.unroute(PLOTLY)                     # which lets the held requests go on, and any asked for from now on
    see_chart(page, "memory-chart")
    cursor = page.locator("[data-testid=memory-chart] ~ .chart-cursor")
    assert memory.locator(".main-svg").count() >= 1
    assert cursor.get_attribute("data-step") == "3"
    assert int(cursor.get_attribute("data-bytes")) == trace["steps"][3]["live_bytes"]
    assert cursor.evaluate("line => line.style.transform") != ""          # drawn at step 3, where it waited
    page.wait_for_selector("#inspector .inspector-heatmap .main-svg")     # the selected x's values, drawn now
    assert see_chart(page, "lifetime-chart").locator(".main-svg").count() >= 1
    expect(page.locator(EXPLORER)).to_have_attribute("data-ready", "true")


def test_without_plotly_the_status_says_so_and_the_graph_still_steps(page, live_server):
    page.route(PLOTLY, lambda route: route.abort())
    open_without_waiting_for_plotly(page, live_server)
    memory = page.get_by_test_id("memory-chart")
    memory.scroll_into_view_if_needed()
    expect(memory).to_have_attribute("data-drawn", "failed")
    expect(page.locator("#status")).to_contain_text("the charts' library (Plotly) could not be loaded")
    page.get_by_test_id("step-forward").click()
    assert page.evaluate("window.tapescope.getStep()") == 1


def test_a_chart_below_the_first_screen_is_plotted_when_scrolled_to_and_one_in_view_with_each_run(page, live_server):
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server}/?preset=deep-mlp")
    page.wait_for_selector(".explorer[data-ready=true]")
    memory = page.get_by_test_id("memory-chart")
    assert memory.bounding_box()["y"] > 800                           # below the first screen at 1280x800
    expect(memory).to_have_attribute("data-drawn", "false")
    assert memory.locator(".main-svg").count() == 0
    assert page.evaluate("typeof window.Plotly") == "undefined"       # nothing on screen needed it

    see_chart(page, "memory-chart")                                    # scrolled to: plotted, the run's peak named
    peak = page.evaluate("window.tapescope.getTrace().summary.peak_bytes")
    assert page.evaluate("document.querySelector('[data-testid=memory-chart]').layout.yaxis.range[1]") >= peak

    # in view, a new run is plotted before the page says ready
    shown = page.evaluate("window.tapescope.traceCount()")
    page.evaluate("""() => { const box = document.querySelector('#editor-panel [data-path="batch"]');
                             box.value = '128'; box.dispatchEvent(new Event('input', { bubbles: true })); }""")
    page.wait_for_function("n => window.tapescope.traceCount() > n && document.querySelector('.explorer').dataset.ready === 'true'",
                           arg=shown)
    assert memory.get_attribute("data-drawn") == "true"
    live = page.evaluate("window.tapescope.getTrace().steps.map((s) => s.live_bytes)")
    assert max(live) < peak
    plotted = page.evaluate("""() => Object.fromEntries(document.querySelector('[data-testid=memory-chart]').data
        .map((d) => [d.name, Array.from(d.y)]))""")
    stacked = [sum(plotted[kind][i] for kind in plotted if kind != "previous run") for i in range(len(live))]
    assert stacked == live                                             # the new run's bands, the old one ghosted
    assert max(plotted["previous run"]) == peak
