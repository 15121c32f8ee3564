"""A model that checkpoints itself (torch.utils.checkpoint, use_reentrant=False) is recorded without extra
recomputes: each block runs once in forward and once in its recompute, which the document draws where torch ran
it (recompute entries and steps inside the backward node that unpacked first), and each entry in a region names
what it needs in backward (`recomputes`) as the plain model's entry saves it."""
import json

import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")
from torch import nn  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

from backend.importers.torch_step import record_step, run_step  # noqa: E402
from backend.trace.document_versions import pack, unpack  # noqa: E402
from backend.trace.intake import load_posted_document  # noqa: E402

N_BLOCKS = 3


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = nn.Linear(8, 16), nn.Linear(16, 8)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x + self.down(torch.tanh(self.up(x)))


class Net(nn.Module):
    def __init__(self, checkpointed):
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(N_BLOCKS))
        self.head = nn.Linear(8, 1)
        self.checkpointed = checkpointed

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False) if self.checkpointed else block(x)
        return self.head(x).pow(2).mean()


def step(checkpointed):
    torch.manual_seed(0)
    return Net(checkpointed), (torch.randn(4, 8),)


@pytest.fixture(scope="module")
def recorded():
    model, batch = step(checkpointed=True)
    document = record_step(model, batch)
    return model, document


def test_each_block_runs_once_in_forward_and_once_in_its_recompute(recorded):
    model, document = recorded
    assert [block.calls for block in model.blocks] == [2] * N_BLOCKS
    regions = document["checkpoint_regions"]
    assert len(regions) == N_BLOCKS
    backward_steps = [s["index"] for s in document["steps"] if s["phase"] == "backward"]
    for region in regions:
        first, end = region["entries"]
        assert all(document["tape"][i]["checkpoint_region"] == region["index"] for i in range(first, end))
        assert first <= region["recomputed_in"] < end          # a node of the region itself unpacked first
        recomputed = [document["tape"][i] for i in region["recompute_entries"]]
        assert recomputed and all(e["phase"] == "recompute" for e in recomputed)
        assert {e["recompute_of"] for e in recomputed} <= set(range(first, end))
        # drawn inside backward, where torch ran it: after some backward step and before others
        assert min(backward_steps) < min(region["recompute_steps"]) and max(region["recompute_steps"]) < max(backward_steps)
    assert {s["phase"] for s in document["steps"]} >= {"forward", "backward", "recompute"}


def test_saves_are_attributed_as_the_plain_models_entries_save(recorded):
    _, document = recorded
    plain = record_step(*step(checkpointed=False))
    names = {t["id"]: t["name"] for t in document["tensors"]}
    plain_names = {t["id"]: t["name"] for t in plain["tensors"]}
    forward = [e for e in document["tape"] if e["phase"] == "forward"]
    assert [e["op"] for e in forward] == [e["op"] for e in plain["tape"]]
    in_regions = [e for e in forward if "checkpoint_region" in e]
    assert len(in_regions) == 6 * N_BLOCKS
    for entry, plain_entry in zip(forward, plain["tape"]):
        kept = entry.get("recomputes", []) if "checkpoint_region" in entry else entry["saved"]
        assert [names[uid] for uid in kept] == [plain_names[uid] for uid in plain_entry["saved"]], entry["index"]
        if "checkpoint_region" in entry:
            assert entry["saved"] == []         # checkpoint keeps placeholders, not these tensors
    saving = [e for e in in_regions if e.get("recomputes")]
    assert all("recomputes them" in e["why"] for e in saving)
    assert sum("batch" in [names[uid] for uid in e["recomputes"]] for e in saving) == 1   # only blocks.0.up's addmm


def test_gradients_equal_torchs_plain_step(recorded):
    model, _ = recorded
    plain, batch = step(checkpointed=False)
    run_step(plain, batch)
    for (name, p), q in zip(model.named_parameters(), plain.parameters()):
        assert torch.equal(p.grad, q.grad), name


def test_the_document_passes_the_servers_checks(recorded):
    _, document = recorded
    posted = json.loads(json.dumps(pack(document)))
    assert load_posted_document(posted) == unpack(posted)
