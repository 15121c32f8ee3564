"""Screenshots saved for a person to look at: the seed tape at a forward step, at the peak and in backward; the graph of
residual-unit, transformer-tiny and gradient-penalty (in backward-2) at 1280x800 and 1920x1080, each legible."""
from pathlib import Path

import pytest

from tests.e2e.explorer_helpers import ARTIFACTS, go_to_step, live_bytes, open_explorer, trace_for


def test_seed_tape_screenshots(page, live_server):
    trace = trace_for(page, live_server, "seed-tape")
    summary = trace["summary"]
    backward = next(s["index"] for s in trace["steps"] if s["phase"] == "backward" and s["index"] > summary["forward_end_step"] + 1)
    Path(ARTIFACTS).mkdir(exist_ok=True)
    open_explorer(page, live_server, "seed-tape")
    shots = {"forward": 2, "peak": summary["peak_step"], "backward": backward}
    for label, step in shots.items():
        go_to_step(page, step)
        page.wait_for_timeout(150)  # the adjoint edge animation and the cursor settle
        path = Path(ARTIFACTS) / f"explorer-seed-tape-{label}.png"
        page.screenshot(path=str(path), full_page=True)
        assert path.stat().st_size > 10_000
    assert live_bytes(page) == trace["steps"][backward]["live_bytes"]


DRAWN_AND_LEGIBLE = """() => {
  const panel = document.querySelector('[data-testid=graph]').getBoundingClientRect();
  const heights = Array.from(document.querySelectorAll('[data-testid=graph] .node .label'), (l) => l.getBoundingClientRect().height)
    .filter((h) => h > 0);
  const current = document.querySelector('[data-testid=graph] .node.current rect')?.getBoundingClientRect();
  return {labels: heights.length, smallest: Math.min(...heights),
          currentInside: !current || (current.left >= panel.left && current.right <= panel.right
                                      && current.top >= panel.top && current.bottom <= panel.bottom)};
}"""


@pytest.mark.parametrize("width,height", [(1280, 800), (1920, 1080)])
@pytest.mark.parametrize("preset_id,phase", [("residual-unit", None), ("transformer-tiny", None), ("gradient-penalty", "backward-2")])
def test_graph_screenshots_are_legible_at_both_sizes(page, live_server, preset_id, phase, width, height):
    """The graph as a person first sees it (or stepped into `phase`), at 1280x800 and 1920x1080, saved to look at."""
    trace = trace_for(page, live_server, preset_id)
    open_explorer(page, live_server, preset_id, size=(width, height))
    if phase:
        go_to_step(page, next(s["index"] for s in trace["steps"] if s["phase"] == phase) + 2)
    page.wait_for_function("() => !document.querySelector('[data-testid=graph]').dataset.panning")
    page.wait_for_timeout(200)   # a relayout after the player unfolds a group, and its pan
    page.wait_for_function("() => !document.querySelector('[data-testid=graph]').dataset.panning")
    seen = page.evaluate(DRAWN_AND_LEGIBLE)
    assert seen["labels"] and seen["smallest"] >= 9.995, seen
    assert seen["currentInside"], seen
    Path(ARTIFACTS).mkdir(exist_ok=True)
    path = Path(ARTIFACTS) / f"graph-{preset_id}{'-' + phase if phase else ''}-{width}.png"
    page.screenshot(path=str(path))
    assert path.stat().st_size > 10_000
