"""A run recorded with --allocator cuda in the page: the memory chart draws what PyTorch's CUDA caching allocator
would reserve over the live bytes, its peak named, and beside the peak the allocator's figures in words, each equal
to the document's; a run without allocator data (a preset, or after Close run) shows none of it."""
import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.explorer_helpers import ARTIFACTS, open_explorer, see_chart

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install -r requirements-torch.txt)")

ROOT = Path(__file__).resolve().parents[2]
OPENED = "() => window.tapescope.getTrace()?.source && document.querySelector('.explorer').dataset.ready === 'true'"
RESERVED = "reserved (CUDA caching allocator)"
MEMORY_CHART = "document.querySelector('[data-testid=memory-chart]')"


@pytest.fixture(scope="module")
def allocator_run(tmp_path_factory):
    """examples/torch/mlp.py's step recorded by the command line with --allocator cuda: (path, document)."""
    from backend.importers.torch import main
    from backend.trace.document_versions import unpack
    path = tmp_path_factory.mktemp("allocator") / "mlp.json"
    assert main([str(ROOT / "examples" / "torch" / "mlp.py"), "--allocator", "cuda", "--out", str(path)]) == 0
    return path, unpack(json.loads(path.read_text()))


def reserved_series(page):
    see_chart(page, "memory-chart")
    return page.evaluate(f"() => {MEMORY_CHART}.data.filter(d => d.name === '{RESERVED}').map(d => Array.from(d.y))")


def annotations(page):
    see_chart(page, "memory-chart")
    return page.evaluate(f"() => {MEMORY_CHART}.layout.annotations.map(a => a.text)")


def shows_no_allocator(page):
    assert reserved_series(page) == []
    assert not any("reserved" in text for text in annotations(page))
    expect(page.locator("[data-testid=memory-chart] .legendtext", has_text="reserved")).to_have_count(0)
    expect(page.get_by_test_id("reserved-readout")).to_be_hidden()
    expect(page.get_by_test_id("allocator-summary")).to_be_hidden()


def test_an_allocator_run_draws_reserved_over_live_and_names_its_figures(page, live_server, allocator_run):
    path, document = allocator_run
    summary, allocator = document["summary"], document["summary"]["allocator"]
    open_explorer(page, live_server, "seed-tape")
    shows_no_allocator(page)                                   # our engine's run has no allocator data

    page.set_input_files("[data-testid=open-run]", str(path))
    page.wait_for_function(OPENED)
    reserved = [step["reserved_bytes"] for step in document["steps"]]
    assert reserved_series(page) == [reserved]
    assert all(r >= step["live_bytes"] for r, step in zip(reserved, document["steps"]))
    expect(page.locator("[data-testid=memory-chart] .legendtext", has_text=RESERVED)).to_be_visible()
    assert "reserved peak 2.0 MiB" in annotations(page)      # mlp.py's 66 KB peak reserves one 2 MiB segment
    assert summary["reserved_peak_bytes"] == 2 * 1024 ** 2

    readout = page.get_by_test_id("reserved-peak-bytes")
    expect(readout).to_be_visible()
    expect(readout).to_have_attribute("data-bytes", str(summary["reserved_peak_bytes"]))
    expect(readout).to_have_text("2.0 MiB")
    box = page.get_by_test_id("allocator-summary")
    expect(box).to_be_visible()
    figures = {"reserved-peak": summary["reserved_peak_bytes"],
               "allocated-peak": allocator["allocated_peak_bytes"],
               "inactive": allocator["inactive_at_reserved_peak_bytes"],
               "largest-free": allocator["largest_free_at_reserved_peak_bytes"],
               "segments": allocator["segments_made"]}
    shown = page.eval_on_selector_all("[data-testid=allocator-summary] [data-figure]",
                                      "spans => Object.fromEntries(spans.map(s => [s.dataset.figure, Number(s.dataset.value)]))")
    assert shown == figures
    expect(box).to_contain_text(f"reserved peak2.0 MiB at step {summary['reserved_peak_step']}")
    expect(box).to_contain_text(f"allocated peak69.0 KiB at step {allocator['allocated_peak_step']}")
    expect(box).to_contain_text("segments1 cudaMalloc calls")
    expect(box).to_contain_text("Reserved ≥ allocated")

    shots = ROOT / ARTIFACTS
    shots.mkdir(exist_ok=True)
    for width, height in ((1280, 800), (1920, 1080)):
        page.set_viewport_size({"width": width, "height": height})
        box.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / f"allocator-mlp-{width}.png"))

    page.get_by_test_id("close-run").click()                 # back to the preset: nothing of the allocator is left
    page.wait_for_function("() => window.tapescope?.getTrace()?.spec?.name === 'seed-tape'"
                           " && document.querySelector('.explorer').dataset.ready === 'true'")
    shows_no_allocator(page)
