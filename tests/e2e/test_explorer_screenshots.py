"""Screenshots saved for a person to look at: the seed tape at a forward step, at the peak and in backward; the graph of
residual-unit, transformer-tiny and gradient-penalty (in backward-2) at 1280x800 and 1920x1080. Each is checked for
what the person would see: boxes inside the graph panel, labels that do not overlap, the legend, legible text."""
from pathlib import Path

import pytest

from tests.e2e.explorer_helpers import ARTIFACTS, go_to_step, live_bytes, open_explorer, see_charts, trace_for


def test_seed_tape_screenshots(page, live_server):
    trace = trace_for(page, live_server, "seed-tape")
    summary = trace["summary"]
    backward = next(s["index"] for s in trace["steps"] if s["phase"] == "backward" and s["index"] > summary["forward_end_step"] + 1)
    Path(ARTIFACTS).mkdir(exist_ok=True)
    open_explorer(page, live_server, "seed-tape")
    see_charts(page)                # a full page does not scroll: the charts are plotted first
    shots = {"forward": 2, "peak": summary["peak_step"], "backward": backward}
    for label, step in shots.items():
        go_to_step(page, step)
        page.wait_for_timeout(150)  # the adjoint edge animation and the cursor settle
        path = Path(ARTIFACTS) / f"explorer-seed-tape-{label}.png"
        page.screenshot(path=str(path), full_page=True)
        assert_a_person_can_read_it(page.evaluate(WHAT_A_PERSON_SEES), label)
    assert live_bytes(page) == trace["steps"][backward]["live_bytes"]


WHAT_A_PERSON_SEES = """() => {
  const panel = document.querySelector('[data-testid=graph]').getBoundingClientRect();
  const inside = (r) => r.left >= panel.left - 0.5 && r.right <= panel.right + 0.5
                        && r.top >= panel.top - 0.5 && r.bottom <= panel.bottom + 0.5;
  const meets = (r) => r.right > panel.left && r.left < panel.right && r.bottom > panel.top && r.top < panel.bottom;
  const boxes = Array.from(document.querySelectorAll('[data-testid=graph] .node > rect'), (b) => b.getBoundingClientRect())
    .filter((r) => r.width > 0 && meets(r));
  const labels = Array.from(document.querySelectorAll('[data-testid=graph] .node .label'), (l) => l.getBoundingClientRect())
    .filter((r) => r.width > 0 && inside(r));
  const overlapping = [];
  labels.forEach((a, i) => labels.slice(i + 1).forEach((b) => {
    const w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    if (w > 1 && h > 1) overlapping.push([a.left, a.top, b.left, b.top].map(Math.round));
  }));
  const legend = Array.from(document.querySelectorAll('.legend[aria-label=Legend] li'))
    .filter((li) => li.getBoundingClientRect().width > 0).map((li) => li.textContent.trim());
  const current = document.querySelector('[data-testid=graph] .node.current > rect')?.getBoundingClientRect();
  return {boxes: boxes.length, boxesInside: boxes.filter(inside).length, labels: labels.length,
          smallest: Math.min(...labels.map((r) => r.height)), overlapping, legend,
          currentInside: !current || inside(current)};
}"""


def assert_a_person_can_read_it(seen, what):
    """Boxes drawn inside the panel, every label legible and clear of the others, the colours explained."""
    assert seen["boxesInside"] >= 3 and seen["boxesInside"] >= 0.8 * seen["boxes"], (what, seen)
    assert seen["labels"] >= 3 and seen["smallest"] >= 9.995, (what, seen)
    assert seen["overlapping"] == [], (what, seen)
    assert len(seen["legend"]) >= 4 and any("saved" in item for item in seen["legend"]), (what, seen)
    assert seen["currentInside"], (what, seen)


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
    Path(ARTIFACTS).mkdir(exist_ok=True)
    path = Path(ARTIFACTS) / f"graph-{preset_id}{'-' + phase if phase else ''}-{width}.png"
    page.screenshot(path=str(path))
    assert_a_person_can_read_it(page.evaluate(WHAT_A_PERSON_SEES), path.name)
