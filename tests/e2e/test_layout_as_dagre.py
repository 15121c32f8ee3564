"""The layouts the page draws are dagre's own: the ranks network-simplex.js works out and the order within each rank
crossing-order.js works out take the place of dagre's two slowest phases, so every layout the page asks for while a
preset opens and unfolds (and deep-mlp's recompute branches under every_k=1) is laid out again in the same page with
dagre's own network simplex and crossing reduction, and the two layouts are equal to the last coordinate. The presets
are the graphs unlike each other: groups nested in groups (transformer-tiny), a second tape (gradient-penalty), the
largest (grad-accumulation: 4 micro-batches' forwards, one optimizer); the small MLPs' layouts are parts of these. All
66 layouts every preset and policy asks for were compared once, outside the suite: all equal."""
import pytest

from tests.e2e.explorer_helpers import open_explorer, unfold_all
from tests.e2e.explorer_helpers import choose

# Every layout input the page sends to its worker or lays out in the page, kept as it was sent.
CAPTURE = """(() => {
  const kept = window.__layoutInputs = [];
  const post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (message) {
    if (message && message.boxes) kept.push(structuredClone(message));
    return post.call(this, message);
  };
  const wrap = setInterval(() => {
    if (!window.tapescopeLayout) return;
    clearInterval(wrap);
    const layout = window.tapescopeLayout;
    window.tapescopeLayout = Object.assign((boxes, edges, clusters, rankdir) => {
      kept.push(structuredClone({ boxes, edges, clusters, rankdir }));
      return layout(boxes, edges, clusters, rankdir);
    }, layout);
  }, 1);
})()"""

# Each kept input laid out with our ranks and order and with dagre's own (its defaults when none is given).
COMPARE = """() => {
  const ours = [window.tapescopeNetworkSimplex, window.tapescopeCrossingOrder];
  const results = [];
  for (const { boxes, edges, clusters, rankdir } of window.__layoutInputs.splice(0)) {   // laying out keeps more
    if (boxes.length > window.tapescopeLayout.turnsMaxBoxes) continue;     // dagre is not used past this
    const fast = JSON.stringify(window.tapescopeLayout(boxes, edges, clusters, rankdir));
    window.tapescopeNetworkSimplex = window.tapescopeCrossingOrder = undefined;
    try {
      const dagres = JSON.stringify(window.tapescopeLayout(boxes, edges, clusters, rankdir));
      results.push({ boxes: boxes.length, clusters: clusters.length, equal: fast === dagres });
    } finally {
      [window.tapescopeNetworkSimplex, window.tapescopeCrossingOrder] = ours;
    }
  }
  return results;
}"""


def laid_out_alike(page):
    results = page.evaluate(COMPARE)
    assert results, "no layout was asked for"
    assert all(r["equal"] for r in results), [r for r in results if not r["equal"]]
    return results


@pytest.mark.parametrize("preset_id", ["transformer-tiny", "gradient-penalty", "grad-accumulation"])
def test_every_layout_of_a_preset_opened_and_unfolded_is_dagres(page, live_server, preset_id):
    page.add_init_script(CAPTURE)
    open_explorer(page, live_server, preset_id)
    unfold_all(page)
    laid_out_alike(page)


def test_recompute_branches_under_every_k_1_are_laid_out_as_dagre_does(page, live_server):
    page.add_init_script(CAPTURE)
    open_explorer(page, live_server, "deep-mlp")
    unfold_all(page)
    choose(page, "every_k", k=1)
    assert max(r["boxes"] for r in laid_out_alike(page)) > 100
