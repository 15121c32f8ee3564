"""A run of a model that checkpoints itself (torch.utils.checkpoint) in the page: each checkpointed block is drawn as a
checkpoint (its box and frame), and the recompute torch ran inside backward as our engine's checkpointed traces draw
theirs: recomputed nodes with a ↻, the step caption and the sweep panel naming the region and
the backward node that ran it, the memory chart's recompute shading; each equal to the document's checkpoint_regions."""
import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.explorer_helpers import ARTIFACTS, go_to_step, open_explorer, see_chart, unfold_all

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install -r requirements-torch.txt)")

OPENED = "() => window.tapescope.getTrace()?.source && document.querySelector('.explorer').dataset.ready === 'true'"
MODEL = '''"""Three residual blocks, each run under torch.utils.checkpoint, and a head."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = nn.Linear(16, 64), nn.Linear(64, 16)

    def forward(self, x):
        return x + self.down(torch.tanh(self.up(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(3))
        self.head = nn.Linear(16, 1)

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False)
        return self.head(x)


def build():
    torch.manual_seed(0)
    return Net(), (torch.randn(32, 16), torch.randn(32, 1)), nn.functional.mse_loss
'''


@pytest.fixture(scope="module")
def checkpointing_run(tmp_path_factory):
    """The model above recorded by the command line: (path of run.json, the document unpacked)."""
    from backend.importers.torch import main
    from backend.trace.document_versions import unpack
    folder = tmp_path_factory.mktemp("self-checkpointing")
    (folder / "blocks.py").write_text(MODEL)
    path = folder / "run.json"
    assert main([str(folder / "blocks.py"), "--out", str(path)]) == 0
    return path, unpack(json.loads(path.read_text()))



GRAPH = "[data-testid=graph]"
RECOMPUTE_BANDS = """() => document.querySelector('[data-testid=memory-chart]').layout.shapes
    .filter(s => s.fillcolor === '#CC79A7').map(s => [s.x0 + 0.5, s.x1 - 0.5])"""


def shot(page, name):
    ARTIFACTS_DIR.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS_DIR / f"self-checkpointing-{name}-1280.png"))


ARTIFACTS_DIR = Path(__file__).resolve().parents[2] / ARTIFACTS


def test_checkpointed_blocks_and_their_recompute_are_drawn_as_the_document_records_them(page, live_server, checkpointing_run):
    path, document = checkpointing_run
    regions = document["checkpoint_regions"]
    assert len(regions) == 3
    for i, region in enumerate(regions):          # the model's own blocks, one region each
        first, end = region["entries"]
        assert all(document["tape"][e]["scope"].startswith(f"blocks.{i}") for e in range(first, end))
    open_explorer(page, live_server, "seed-tape", size=(1280, 800))
    page.set_input_files("[data-testid=open-run]", str(path))
    page.wait_for_function(OPENED)

    # The graph: each checkpointed block's box is a checkpoint, and says so; the head is not.
    page.locator(f"{GRAPH} .group-node[data-group-id='blocks.0']").wait_for()
    checkpointed = page.locator(f"{GRAPH} .group-node.checkpointed")
    expect(checkpointed).to_have_count(len(regions))
    assert checkpointed.evaluate_all("g => g.map(n => n.dataset.groupId)") == [f"blocks.{i}" for i in range(len(regions))]
    for i in range(len(regions)):
        expect(page.locator(f"{GRAPH} .group-node[data-group-id='blocks.{i}'] .label")).to_contain_text("⟲ checkpointed")
    shot(page, "opened")

    # The memory chart shades each region's recompute, where torch ran it inside backward.
    see_chart(page, "memory-chart")
    page.evaluate("window.scrollTo(0, 0)")
    runs = sorted([r["recompute_steps"][0], r["recompute_steps"][-1]] for r in regions)
    assert all(r["recompute_steps"] == list(range(r["recompute_steps"][0], r["recompute_steps"][-1] + 1)) for r in regions)
    assert sorted(page.evaluate(RECOMPUTE_BANDS)) == runs

    # A recompute step: the caption, the sweep panel and the folded block say which region re-runs and who ran it.
    region = regions[-1]
    owner = document["tape"][region["recomputed_in"]]
    go_to_step(page, region["recompute_steps"][1])
    where = f"checkpoint region {region['index']} (blocks.{region['index']}), inside {owner['backward']} (entry {region['recomputed_in']})"
    expect(page.get_by_test_id("step-label")).to_contain_text(f"for {where}")
    expect(page.get_by_test_id("sweep")).to_contain_text(where)
    # the player opens the block the cursor is in: its frame is a checkpoint's, the current node a recomputed one
    page.locator(f"{GRAPH} .group-frame.checkpointed[data-group-id='blocks.{region['index']}']").wait_for()
    current = page.locator(f"{GRAPH} .node.current")
    expect(current).to_have_attribute("data-node-id", str(region["recompute_entries"][1]))
    expect(current).to_have_class(re.compile(r"\brecompute-node\b"))
    shot(page, "recompute")
    see_chart(page, "memory-chart")
    shot(page, "recompute-memory")
    page.evaluate("window.scrollTo(0, 0)")

    # The backward node that unpacked first says it ran the recompute, and when.
    sweep_step = next(item["step"] for item in document["sweep"] if item["entry"] == region["recomputed_in"])
    go_to_step(page, sweep_step)
    steps = region["recompute_steps"]
    expect(page.get_by_test_id("checkpoint-backward")).to_contain_text(f"recompute steps {steps[0]}–{steps[-1]}")

    # Unfolded: the recomputed nodes wear the ↻ and are exactly the document's recompute entries; a forward op inside
    # a region says it keeps nothing and is re-run.
    unfold_all(page)
    go_to_step(page, region["recompute_steps"][1])
    recomputed = page.locator(f"{GRAPH} .node.recompute-node").evaluate_all("n => n.map(e => Number(e.dataset.nodeId))")
    assert sorted(recomputed) == sorted(e for r in regions for e in r["recompute_entries"])
    expect(page.locator(f"{GRAPH} .node.recompute-node .recompute-badge")).to_have_count(len(recomputed))
    expect(page.locator(f"{GRAPH} .group-frame.checkpointed")).to_have_count(len(regions))
    page.get_by_role("button", name="Fit").click()
    shot(page, "recompute-unfolded")
    inside = next(e for e in range(*region["entries"]) if document["tape"][e].get("recomputes"))   # an op that saves
    go_to_step(page, next(s["index"] for s in document["steps"] if s["phase"] == "forward" and s["entry"] == inside))
    expect(page.get_by_test_id("step-label")).to_contain_text(
        f"inside checkpoint region {region['index']} (blocks.{region['index']}): recomputed in backward")
    note = page.get_by_test_id("checkpointed-forward")
    expect(note).to_contain_text("autograd keeps placeholders, not")
    expect(note).to_contain_text(f"steps {steps[0]}–{steps[-1]}")
