"""Sharing by link in a real browser: a snapshot opens read-only at the same step and selection; a copy is editable."""
from tests.e2e.explorer_helpers import go_to_step, open_explorer, shown_trace, trace_for


def test_a_shared_backward_step_opens_the_same_in_a_fresh_browser_and_copies_into_a_session(page, browser, live_server):
    trace = trace_for(page, live_server, "residual-unit")
    backward_step = next(s for s in trace["steps"] if s["phase"] == "backward" and s["index"] > trace["summary"]["forward_end_step"] + 2)
    open_explorer(page, live_server, "residual-unit")
    go_to_step(page, backward_step["index"])
    selected = str(backward_step["entry"])  # the node the view follows, so it is on screen to click
    page.click(f"[data-testid=graph] [data-node-id='{selected}']")
    page.click("[data-testid=share]")
    link = page.locator("[data-testid=share-link]")
    link.wait_for()
    url = link.get_attribute("href")
    assert "/s/" in url

    stranger = browser.new_context(viewport={"width": 1280, "height": 800})  # no cookies of the sharer
    try:
        other = stranger.new_page()
        other.goto(url)
        other.wait_for_selector(".explorer[data-ready=true]")
        assert other.evaluate("window.tapescope.getStep()") == backward_step["index"]
        assert other.locator("[data-testid=graph] .node.selected").get_attribute("data-node-id") == selected
        assert int(other.get_attribute("[data-testid=peak-bytes]", "data-bytes")) == trace["summary"]["peak_bytes"]
        assert other.inner_text("[data-testid=step-label]") == page.inner_text("[data-testid=step-label]")
        assert other.locator("body.read-only").count() == 1
        assert other.locator("[data-testid=preset]").is_disabled()
        assert other.locator("[data-testid=preset]").input_value() == "residual-unit"
        assert other.inner_text("[data-testid=model-origin]") == "snapshot: residual-unit"
        intro = other.inner_text("[data-testid=intro]")       # no "pick a model" beside a dropdown that cannot change
        assert "Pick a model" not in intro and "Make a copy" in intro and other.locator("[data-testid=make-copy]").is_visible()
        # nothing of the editor looks as if it would change the model: only the viewer's own buttons (fold the editor
        # away, Form / JSON) are enabled (JSON's Discard was), and a remove ✕ is not red
        enabled = other.eval_on_selector_all("#editor-panel button", "bs => bs.filter((b) => !b.disabled).map((b) => b.textContent)")
        assert set(enabled) <= {"Edit the model ⇥", "⇤", "Form", "JSON"}, enabled
        removes = other.eval_on_selector_all("#editor-panel button.remove", "bs => bs.map((b) => getComputedStyle(b).color)")
        assert removes and "rgb(154, 52, 18)" not in removes

        other.click("[data-testid=make-copy]")
        other.wait_for_url(f"{live_server}/")
        other.wait_for_selector(".explorer[data-ready=true]")
        assert other.locator("body.read-only").count() == 0
        assert other.locator("[data-testid=make-copy]").is_hidden()
        assert other.evaluate("window.tapescope.getTrace().spec.name") == "residual-unit"
        assert other.evaluate("window.tapescope.getStep()") == backward_step["index"]
        session = other.request.get(f"{live_server}/api/session").json()
        assert session["spec"]["name"] == "residual-unit"
        assert not other.locator("[data-testid=preset]").is_disabled()
        assert other.inner_text("[data-testid=model-origin]") == "copy of residual-unit"
        assert other.locator("[data-testid=preset]").input_value() == "residual-unit"
    finally:
        stranger.close()


def test_a_shared_step_and_selection_inside_folded_modules_open_drawn_not_folded_away(page, browser, live_server):
    """transformer-tiny opens with its modules folded: the op at a shared step, and a tensor selected from the lifetime
    chart or the inspector, can be ops no box shows. The link's reader gets both drawn (their modules unfolded): the
    sharer's player had unfolded the step's, a newcomer's walk found the reader looking at a folded box."""
    open_explorer(page, live_server, "transformer-tiny")
    trace = shown_trace(page)
    drawn = set(page.eval_on_selector_all("[data-testid=graph] .node[data-node-id]", "ns => ns.map((n) => Number(n.dataset.nodeId))"))
    step = next(s for s in trace["steps"] if s["phase"] == "backward" and s["entry"] is not None and s["entry"] not in drawn)
    hidden = next(e["index"] for e in trace["tape"] if e["index"] not in drawn and e["scope"] != trace["tape"][step["entry"]]["scope"])
    go_to_step(page, step["index"])
    page.evaluate("id => window.tapescope.select(id)", f"e{hidden}")
    page.click("[data-testid=share]")
    link = page.locator("[data-testid=share-link]")
    link.wait_for()

    stranger = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        other = stranger.new_page()
        other.goto(link.get_attribute("href"))
        other.wait_for_selector(".explorer[data-ready=true]")
        assert other.evaluate("window.tapescope.getStep()") == step["index"]
        assert other.locator("[data-testid=graph] .node.selected").get_attribute("data-node-id") == str(hidden)
        assert other.locator("[data-testid=graph] .node.current").get_attribute("data-node-id") == str(step["entry"])
        assert other.get_by_test_id("graph-unfold-all").text_content() == "Unfold all"     # only their modules opened
    finally:
        stranger.close()
