"""Moving around the recorded graph as a person does: a plain wheel scrolls the page and Ctrl + wheel zooms; the fit,
zoom and 1:1 buttons and their keys; a double-click zooms to a node; labels are never drawn under 10 px on screen;
the search box lights up matches and Enter zooms to them; playing pans smoothly to keep the current node in view, and
a visitor who asks for reduced motion gets every move without the glide."""
import pytest

from backend.models.presets import PRESETS
from tests.e2e.explorer_helpers import go_to_step, open_explorer, presets, trace_for, unfold_all

SCALE = "() => Number(document.querySelector('[data-testid=graph]').dataset.scale)"
LABEL_HEIGHTS = """() => Array.from(document.querySelectorAll('[data-testid=graph] .node .label'),
  (label) => label.getBoundingClientRect().height).filter((h) => h > 0)"""
CENTRE_IN_PANEL = """selector => {
  const panel = document.querySelector('[data-testid=graph]').getBoundingClientRect();
  const r = document.querySelector(`[data-testid=graph] ${selector} > rect`).getBoundingClientRect();
  const [x, y] = [r.left + r.width / 2, r.top + r.height / 2];
  return {inside: x > panel.left && x < panel.right && y > panel.top && y < panel.bottom,
          dx: x - (panel.left + panel.width / 2), dy: y - (panel.top + panel.height / 2)};
}"""


def scale(page):
    return page.evaluate(SCALE)


def settle(page):
    """Wait for a smooth pan or zoom to end."""
    page.wait_for_function("() => !document.querySelector('[data-testid=graph]').dataset.panning")


def test_a_plain_wheel_scrolls_the_page_and_ctrl_wheel_zooms_the_graph(page, live_server):
    open_explorer(page, live_server, "transformer-tiny")
    box = page.get_by_test_id("graph").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    fitted = scale(page)
    page.mouse.wheel(0, 300)
    page.wait_for_function("() => window.scrollY > 0")
    assert scale(page) == fitted, "a plain wheel over the graph zoomed it"

    page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_function("() => window.scrollY === 0")
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -300)
    page.keyboard.up("Control")
    page.wait_for_function(f"s => ({SCALE})() > s", arg=fitted)
    assert page.evaluate("window.scrollY") == 0, "Ctrl + wheel scrolled the page"


ZOOM_IN_AND_READ = """() => {
  const graph = document.querySelector('[data-testid=graph]');
  document.querySelector('[data-testid=graph-zoom-in]').click();
  return { scale: Number(graph.dataset.scale), panning: graph.dataset.panning ?? null };   // in the click's own task
}"""


def test_a_visitor_who_asks_for_reduced_motion_gets_moves_without_animation(page, browser, live_server):
    """prefers-reduced-motion (WCAG 2.3.3): a zoom, fit or follow jumps to where it goes instead of gliding there; a
    visitor who did not ask still gets the glide, which is at its start in the click's own task."""
    open_explorer(page, live_server, "lab1-mlp")
    fitted = scale(page)
    assert page.evaluate(ZOOM_IN_AND_READ) == {"scale": fitted, "panning": "true"}
    settle(page)
    assert scale(page) == pytest.approx(fitted * 1.25, rel=0.01)

    context = browser.new_context(viewport={"width": 1280, "height": 800}, reduced_motion="reduce")
    try:
        still = context.new_page()
        open_explorer(still, live_server, "lab1-mlp")
        fitted = scale(still)
        moved = still.evaluate(ZOOM_IN_AND_READ)
        assert moved["panning"] is None and moved["scale"] == pytest.approx(fitted * 1.25, rel=0.01)
        still.get_by_test_id("graph-fit").click()
        assert still.evaluate("() => document.querySelector('[data-testid=graph]').dataset.panning ?? null") is None
        assert scale(still) == pytest.approx(fitted)
    finally:
        context.close()


def test_the_buttons_and_keys_zoom_fit_and_reset(page, live_server):
    open_explorer(page, live_server, "lab1-mlp")
    fitted = scale(page)
    page.get_by_test_id("graph-zoom-in").click()
    settle(page)
    assert scale(page) == pytest.approx(fitted * 1.25, rel=0.01)
    page.get_by_test_id("graph-zoom-out").click()
    page.get_by_test_id("graph-zoom-out").click()
    settle(page)
    assert scale(page) == pytest.approx(fitted / 1.25, rel=0.01)
    page.get_by_role("button", name="1:1").click()
    settle(page)
    assert scale(page) == pytest.approx(1.0)
    page.get_by_test_id("graph-fit").click()
    settle(page)
    assert scale(page) == pytest.approx(fitted)

    page.get_by_test_id("graph").focus()
    page.keyboard.press("+")
    settle(page)
    assert scale(page) == pytest.approx(fitted * 1.25, rel=0.01)
    page.keyboard.press("0")
    settle(page)
    assert scale(page) == pytest.approx(1.0)
    page.keyboard.press("-")
    settle(page)
    assert scale(page) == pytest.approx(0.8, rel=0.01)
    page.keyboard.press("f")
    settle(page)
    assert scale(page) == pytest.approx(fitted)


TOOLS_OVER_DRAWING = """() => {
  const drawing = document.querySelector('[data-testid=graph]').getBoundingClientRect();
  const tools = ['graph-search', 'graph-unfold-all', 'graph-fit', 'graph-zoom-out', 'graph-zoom-in', 'graph-actual-size'];
  return tools.map((id) => [id, document.querySelector(`[data-testid=${id}]`).getBoundingClientRect()])
    .filter(([, r]) => r.width && r.bottom > drawing.top + 0.5).map(([id]) => id);
}"""


def test_the_graphs_tools_sit_above_the_drawing_never_over_a_node(page, live_server):
    """deep-mlp's step 58 pans a node to the drawing's top edge: its label was under the zoom buttons at 1280x800."""
    open_explorer(page, live_server, "deep-mlp")
    go_to_step(page, 58)
    assert page.get_by_test_id("graph-unfold-all").is_visible()
    for size in ((1280, 800), (1920, 1080)):
        page.set_viewport_size({"width": size[0], "height": size[1]})
        settle(page)
        assert page.evaluate(TOOLS_OVER_DRAWING) == [], size


def test_stepping_through_backward_2_keeps_the_current_node_in_view_and_legible(page, live_server):
    trace = trace_for(page, live_server, "gradient-penalty")
    open_explorer(page, live_server, "gradient-penalty")
    second = [s["index"] for s in trace["steps"] if s["phase"] == "backward-2"]
    assert second
    for step in second:
        page.evaluate("s => window.tapescope.setStep(s)", step)
        # The player may unfold the cursor's group (a relayout), then pans to it.
        page.wait_for_function(f"() => ({CENTRE_IN_PANEL})('.node.current').inside", timeout=5000)
        settle(page)
        assert scale(page) >= 0.85, f"step {step}: the follow pan zoomed out to {scale(page)}"
        assert min(page.evaluate(LABEL_HEIGHTS)) >= 9.995
        assert page.evaluate(CENTRE_IN_PANEL, ".node.current")["inside"], f"step {step}: the current node is out of view"


def test_zoomed_out_a_node_shows_its_glyph_and_keeps_its_label_in_the_title(page, live_server):
    open_explorer(page, live_server, "transformer-tiny")
    unfold_all(page)
    page.get_by_test_id("graph").focus()
    for _ in range(2):
        page.keyboard.press("-")
    settle(page)
    assert 0.45 <= scale(page) < 0.85
    assert page.evaluate(LABEL_HEIGHTS) == []
    matmul = page.locator("[data-testid=graph] .node.fam-matmul").first
    assert matmul.locator(".glyph").text_content() == "@"
    assert matmul.locator(".glyph").bounding_box()["height"] >= 10
    assert "matmul" in matmul.locator("title").text_content()


def test_double_click_zooms_to_a_node(page, live_server):
    open_explorer(page, live_server, "transformer-tiny")
    unfold_all(page)
    node_id = "0"
    page.locator(f"[data-testid=graph] [data-node-id='{node_id}'] rect").first.dblclick()
    settle(page)
    assert scale(page) >= 1.2
    where = page.evaluate(CENTRE_IN_PANEL, f"[data-node-id='{node_id}']")
    assert abs(where["dx"]) < 3 and abs(where["dy"]) < 3


def test_search_lights_up_matches_and_enter_zooms_to_the_first(page, live_server):
    trace = trace_for(page, live_server, "transformer-tiny")
    open_explorer(page, live_server, "transformer-tiny")
    search = page.get_by_test_id("graph-search")
    search.fill("softmax")
    softmaxes = [str(n["entry"]) for n in trace["graph"]["nodes"] if n["op"] == "softmax"]
    assert page.get_by_test_id("graph-search-count").text_content() == "2 matches"
    # Folded away inside the two blocks: the blocks' boxes light up.
    lit = page.eval_on_selector_all("[data-testid=graph] .node.match", "ns => ns.map(n => n.dataset.groupId)")
    assert sorted(lit) == ["layers[1]", "layers[2]"]
    search.press("Enter")
    first = page.locator(f"[data-testid=graph] [data-node-id='{softmaxes[0]}']")
    first.wait_for()
    settle(page)
    assert "match" in first.get_attribute("class").split()
    where = page.evaluate(CENTRE_IN_PANEL, f"[data-node-id='{softmaxes[0]}']")
    assert where["inside"] and abs(where["dx"]) < 3

    unfold_all(page)
    search.fill("layers[2].mlp")
    in_scope = sorted(str(n["entry"]) for n in trace["graph"]["nodes"] if n.get("scope") == "layers[2].mlp")
    lit = page.eval_on_selector_all("[data-testid=graph] .node.match[data-node-id]", "ns => ns.map(n => n.dataset.nodeId)")
    assert in_scope and sorted(lit) == in_scope
    search.press("Escape")
    assert page.locator("[data-testid=graph] .node.match").count() == 0


def test_playing_pans_smoothly_to_keep_the_current_node_in_view(page, live_server):
    trace = trace_for(page, live_server, "transformer-tiny")
    open_explorer(page, live_server, "transformer-tiny")
    unfold_all(page)   # entry 40 is drawn, off screen (folded, the player would unfold its block around it instead)
    far = next(s for s in trace["steps"] if s["phase"] == "forward" and s["entry"] == 40)
    # The transform over the frames after one step: a pan goes through places in between, never one jump.
    frames = page.evaluate("""step => new Promise((resolve) => {
      const viewport = document.querySelector('[data-testid=graph] .viewport');
      const seen = [viewport.getAttribute('transform')];
      window.tapescope.setStep(step);
      (function frame() {
        seen.push(viewport.getAttribute('transform'));
        if (seen.length < 40) requestAnimationFrame(frame); else resolve(seen);
      })();
    })""", far["index"])
    assert len(set(frames)) >= 4, "the view jumped to the current node"
    settle(page)
    assert page.evaluate(CENTRE_IN_PANEL, "[data-node-id='40']")["inside"]


INSIDE_SHARE = """() => {
  const panel = document.querySelector('[data-testid=graph]').getBoundingClientRect();
  const boxes = Array.from(document.querySelectorAll('[data-testid=graph] .node'), (n) => n.getBoundingClientRect())
    .filter((r) => r.width > 0 || r.height > 0);
  const inside = boxes.filter((r) => r.left >= panel.left - 1 && r.right <= panel.right + 1
                                      && r.top >= panel.top - 1 && r.bottom <= panel.bottom + 1);
  return {drawn: boxes.length, inside: inside.length};
}"""


@pytest.mark.parametrize("preset_id", list(PRESETS))
def test_fit_frames_every_preset_folded_and_unfolded_at_both_sizes_with_legible_labels(page, live_server, preset_id):
    """transformer-tiny, Unfold all, Fit once showed 0 of 116 nodes: fit anchored on the layout's empty corner. The
    preset is opened once; Fit is pressed at 1280x800 and at 1920x1080, folded and then unfolded. Folded at 1280x800
    (the issue's sentence): every drawn label is >= 10 px tall, nothing is drawn outside the panel, and the whole is
    in view, so no minimap."""
    assert preset_id in presets(page, live_server)
    # Where Fit frames is the question, not how it glides there (test_playing_pans_smoothly_... and the reduced-motion
    # test below are about that): a visitor who asks for reduced motion gets the same frame at once, not 0.33 s later.
    page.emulate_media(reduced_motion="reduce")
    open_explorer(page, live_server, preset_id)
    for unfolded in (False, True):
        if unfolded:
            unfold_all(page)
        for size in ((1280, 800), (1920, 1080)):
            page.set_viewport_size({"width": size[0], "height": size[1]})
            page.get_by_test_id("graph-fit").click()
            settle(page)
            counted = page.evaluate(INSIDE_SHARE)
            assert counted["drawn"] and counted["inside"] >= 0.95 * counted["drawn"], (unfolded, size, counted)
            if not unfolded and size == (1280, 800):
                folded_fit_is_legible_and_whole(page, preset_id)


def folded_fit_is_legible_and_whole(page, preset_id):
    heights = page.evaluate(LABEL_HEIGHTS)
    assert heights, f"{preset_id}: fit shows no label at all"
    assert min(heights) >= 9.995, f"{preset_id}: a label is {min(heights):.1f} px tall"
    outside = page.evaluate("""() => {
      const panel = document.querySelector('[data-testid=graph]').getBoundingClientRect();
      const drawn = document.querySelectorAll('[data-testid=graph] .node, [data-testid=graph] .group-frame rect.frame');
      return Array.from(drawn, (n) => [n.closest('[data-node-id], [data-tensor-id], [data-group-id]'), n.getBoundingClientRect()])
        .filter(([, r]) => r.left < panel.left - 1 || r.right > panel.right + 1 || r.top < panel.top - 1 || r.bottom > panel.bottom + 1)
        .map(([n]) => n?.dataset.nodeId ?? n?.dataset.tensorId ?? n?.dataset.groupId);
    }""")
    assert not outside, f"{preset_id}: drawn outside the panel after fit: {outside}"
    assert not page.get_by_test_id("graph-minimap").is_visible(), f"{preset_id}: the whole is in view, no minimap needed"
