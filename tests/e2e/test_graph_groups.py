"""Modules that fold, as a person sees them: transformer-tiny opens with its layers and blocks folded into boxes that
carry their name and saved bytes; a click unfolds a box and a click on the open frame's name folds it back; playing
into a folded block unfolds it and leaving folds it again; "Unfold all" draws every node."""
from tests.e2e.explorer_helpers import go_to_step, open_explorer, trace_for

DRAWN = "[data-testid=graph] .node"


def saved_bytes_in(trace, scope):
    """What the entries in `scope` save for backward, written the way the page writes bytes."""
    inside = {e["index"] for e in trace["tape"] if e["scope"] == scope or (e["scope"] or "").startswith((scope + ".", scope + "["))}
    total = sum(t["nbytes"] for t in trace["tensors"] if t["saved_by"] and t["produced_by"] in inside)
    return f"{total / 1024:.1f} KiB" if total >= 1024 else f"{total} B"


def test_folding_a_block_reduces_the_drawing_and_shows_its_saved_bytes(page, live_server):
    trace = trace_for(page, live_server, "transformer-tiny")
    open_explorer(page, live_server, "transformer-tiny")
    total = len(trace["graph"]["nodes"]) + len(trace["graph"]["leaves"])
    block = page.locator("[data-testid=graph] .group-node[data-group-id='layers[1]']")
    assert block.get_attribute("data-collapsed") == "true"
    assert block.locator(".label").text_content() == f"layers[1] · block · {saved_bytes_in(trace, 'layers[1]')}"
    folded = page.locator(DRAWN).count()
    assert folded < total / 3

    block.locator("rect").click()
    frame = page.locator("[data-testid=graph] .group-frame[data-group-id='layers[1]']")
    frame.wait_for()
    assert frame.get_attribute("data-collapsed") == "false"
    unfolded = page.locator(DRAWN).count()
    assert unfolded > folded
    # Inside the open block, attention and mlp are folded boxes of their own.
    assert page.locator("[data-testid=graph] .group-node[data-group-id='layers[1].attn']").count() == 1

    frame.locator(".frame-label").click()
    page.wait_for_function("n => document.querySelectorAll('[data-testid=graph] .node').length === n", arg=folded)
    assert page.locator("[data-testid=graph] .group-node[data-group-id='layers[1]']").get_attribute("data-collapsed") == "true"

    page.get_by_test_id("graph-unfold-all").click()
    page.wait_for_function("n => document.querySelectorAll('[data-testid=graph] .node').length === n", arg=total)
    assert page.locator("[data-testid=graph] .group-node").count() == 0


def test_playing_into_a_folded_block_unfolds_it_and_leaving_folds_it_back(page, live_server):
    trace = trace_for(page, live_server, "transformer-tiny")
    open_explorer(page, live_server, "transformer-tiny")
    assert page.locator("[data-testid=graph] .group-node[data-group-id='layers[2]']").count() == 1
    inside = next(s for s in trace["steps"] if s["phase"] == "forward" and s["entry"] is not None
                  and trace["tape"][s["entry"]]["scope"].startswith("layers[2]."))
    go_to_step(page, inside["index"])
    current = page.locator(f"[data-testid=graph] [data-node-id='{inside['entry']}']")
    current.wait_for()
    assert "current" in current.get_attribute("class").split()
    assert page.locator("[data-testid=graph] .group-frame[data-group-id='layers[2]']").count() == 1
    go_to_step(page, 0)
    page.locator("[data-testid=graph] .group-node[data-group-id='layers[2]']").wait_for()
    assert page.locator(f"[data-testid=graph] [data-node-id='{inside['entry']}']").count() == 0


def test_leaving_a_block_for_an_optimizer_step_never_leaves_the_panel_empty(page, live_server):
    """The player folds the block back; at an optimizer step nothing anchors the view, so the folded drawing is
    fitted rather than left where the open block's drawing was (which showed an empty panel)."""
    trace = trace_for(page, live_server, "transformer-tiny")
    open_explorer(page, live_server, "transformer-tiny")
    inside = next(s for s in trace["steps"] if s["phase"] == "forward" and s["entry"] is not None
                  and trace["tape"][s["entry"]]["scope"].startswith("layers[1]."))
    go_to_step(page, inside["index"])
    page.locator("[data-testid=graph] .group-frame[data-group-id='layers[1]']").wait_for()
    optimizer = next(s for s in trace["steps"] if s["phase"] == "optimizer")
    go_to_step(page, optimizer["index"])
    page.locator("[data-testid=graph] .group-node[data-group-id='layers[1]']").wait_for()
    page.wait_for_function("() => !document.querySelector('[data-testid=graph]').dataset.panning")
    in_panel = page.evaluate("""() => {
      const panel = document.querySelector('[data-testid=graph]').getBoundingClientRect();
      const boxes = Array.from(document.querySelectorAll('[data-testid=graph] .node'), (n) => n.getBoundingClientRect());
      return [boxes.filter((r) => r.right > panel.left && r.left < panel.right && r.bottom > panel.top && r.top < panel.bottom).length, boxes.length];
    }""")
    assert in_panel[0] == in_panel[1], f"{in_panel[0]} of {in_panel[1]} boxes in the panel"



LAYOUTS = "name => performance.getEntriesByName(name).length"


def test_a_re_trace_that_keeps_the_boxes_is_drawn_without_laying_out_again(page, live_server):
    """A new batch size re-traces deep-mlp, unfolded: the same boxes and edges, so the layout kept from before draws
    it (views/graph/layout.js marks each layout it runs and each it keeps, as DevTools' Performance panel shows)."""
    open_explorer(page, live_server, "deep-mlp")
    page.get_by_test_id("graph-unfold-all").click()
    page.wait_for_function("() => !document.querySelector('[data-testid=graph] .group-node')"
                           " && document.querySelector('.explorer').dataset.ready === 'true'")
    run, kept = page.evaluate(LAYOUTS, "tapescope:layout-run"), page.evaluate(LAYOUTS, "tapescope:layout-kept")
    drawn = page.locator(DRAWN).count()
    page.locator('#editor-panel .editor-form [data-field="batch"] > [data-path="batch"]').fill("128")
    page.wait_for_function("() => window.tapescope.getTrace()?.spec.batch === 128"
                           " && document.querySelector('.explorer').dataset.ready === 'true'")
    assert page.evaluate(LAYOUTS, "tapescope:layout-run") == run
    assert page.evaluate(LAYOUTS, "tapescope:layout-kept") > kept and page.locator(DRAWN).count() == drawn


def test_a_step_taken_as_soon_as_a_new_run_is_shown_still_unfolds_its_block(page, live_server):
    """The step a new graph opened on was noted when its settle timer fired; a step within that 120 ms (a quick press,
    a test stepping at once) cancelled it and was itself taken for the opening step, so its block stayed folded (seen
    as a browser test's 30 s wait for a node in a whole-suite run)."""
    open_explorer(page, live_server, "transformer-tiny")
    assert page.locator("[data-testid=graph] [data-group-id='layers[1]']").count() == 1        # opened folded
    page.evaluate("""() => {
        const root = document.querySelector('.explorer');
        new MutationObserver((changes, observer) => {
          const trace = window.tapescope.getTrace();
          if (root.dataset.interactive !== 'true' || trace.schedule?.policy !== 'every_k') return;
          observer.disconnect();
          const softmax = trace.tape.find((e) => e.op === 'softmax' && e.scope === 'layers[1].attn');
          window.__stepped = trace.steps.find((s) => s.phase === 'backward' && s.entry === softmax.index).index;
          window.tapescope.setStep(window.__stepped);          // at once, in the task that showed the run
        }).observe(root, { attributes: true, attributeFilter: ['data-interactive'] });
      }""")
    page.get_by_test_id("checkpoint-policy").select_option("every_k")
    page.wait_for_function("() => window.__stepped !== undefined")
    entry = page.evaluate("window.tapescope.getTrace().steps[window.__stepped].entry")
    page.locator(f"[data-testid=graph] [data-node-id='{entry}']").wait_for(timeout=5000)     # its block unfolded
