"""The torch recorder's statistics: each tensor described as it was at birth, and the hooks' shortcuts (copies
reduced after the step, one description for tensors that read the same unchanged values) change no figure."""
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")
# One worker records this file's models (make test runs --dist loadgroup): spread over workers, each would build
# every model again.
pytestmark = pytest.mark.xdist_group("torch-statistics")

from backend.importers import torch_recorder  # noqa: E402
from backend.importers.torch_step import load_build, record_step, unpack_build  # noqa: E402
from backend.trace import values  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def fresh(example):
    return unpack_build(load_build(ROOT / "examples" / "torch" / f"{example}.py")())


def _without_addresses(node):
    """Allocator addresses differ run to run; everything else of a seeded step is the same."""
    if isinstance(node, dict):
        return {key: _without_addresses(value) for key, value in node.items() if key != "address"}
    if isinstance(node, list):
        return [_without_addresses(item) for item in node]
    return node


def _unfilled(document):
    """Tensors born of empty_like: their statistics are of whatever memory the allocator handed out."""
    return {t["id"] for t in document["tensors"]
            if t["produced_by"] is not None and document["tape"][t["produced_by"]]["op"] == "empty_like"}


def _comparable(document):
    unfilled = _unfilled(document)
    document = _without_addresses(document)
    for t in document["tensors"]:
        if t["id"] in unfilled:
            t.pop("value", None)
    return document


@pytest.mark.parametrize("example,with_values", [("gpt", False), ("transformer_tiny", True)])
def test_the_shortcuts_change_no_figure(monkeypatch, example, with_values):
    # Without the profiler's workspace: what the allocator held beyond the run's storages moves between identical
    # steps (seen once in a whole-suite run: gpt's steps differed there and nowhere else); the shortcuts are the hooks'.
    fast = record_step(*fresh(example), values=with_values, workspace=False)
    monkeypatch.setattr(values, "DEFERRED_BYTES", 0)                     # every tensor reduced in its hook
    monkeypatch.setattr(torch_recorder.TorchRecorder, "_sequence", lambda self, tensor, with_values: (None, None))
    slow = record_step(*fresh(example), values=with_values, workspace=False)
    assert sum(1 for t in fast["tensors"] if "value" in t) > 100
    assert _comparable(fast) == _comparable(slow)


class InPlace(torch.nn.Module):
    """y = 2·linear(x); y += 1 in place; z = y.view(-1): z reads y's storage after the write, y was born before it."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.linear(x) * 2
        y.add_(1)
        return y.view(-1).sum()


def test_a_view_born_after_an_in_place_write_is_described_anew():
    torch.manual_seed(0)
    document = record_step(InPlace(), torch.randn(3, 4))
    by_op = {}
    for t in document["tensors"]:
        if t["produced_by"] is not None:
            by_op.setdefault(document["tape"][t["produced_by"]]["op"], t)
    born, viewed = by_op["mul"], by_op["view"]
    assert viewed["storage"] == born["storage"]
    assert viewed["value"]["mean"] == pytest.approx(born["value"]["mean"] + 1, abs=1e-5)
    assert viewed["value"]["max"] == pytest.approx(born["value"]["max"] + 1, abs=1e-5)


def test_add_statistics_describes_the_array_as_it_was_when_added():
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    table, target = values.ValueTable(), {}
    table.add_statistics(target, array)
    array[:] = 100.0                    # the tensor changes after its hook: its description does not
    table.fill()
    assert target == {"min": 0.0, "max": 5.0, "mean": 2.5, "norm": pytest.approx(np.sqrt(55.0), rel=1e-6)}


def test_past_the_deferred_budget_arrays_are_reduced_at_once(monkeypatch):
    monkeypatch.setattr(values, "DEFERRED_BYTES", 16)
    arrays = [np.linspace(-1, 3, 4, dtype=np.float32), np.linspace(-2, 5, 50, dtype=np.float32)]   # 16 B, 200 B
    table, targets = values.ValueTable(), [{}, {}]
    for target, array in zip(targets, arrays):
        table.add_statistics(target, array)
    arrays[1][:] = 0.0                  # reduced when added: past the budget, nothing was kept
    table.fill()
    assert targets[0]["max"] == 3.0 and targets[1]["max"] == 5.0


def test_add_same_copies_only_the_description():
    table, source, target = values.ValueTable(), {"tensor": 3, "shape": [2]}, {"tensor": 7, "shape": [1, 2]}
    table.add_statistics(source, np.array([1.0, 3.0]))
    table.add_same(target, source)
    table.fill()
    assert target == {"tensor": 7, "shape": [1, 2], "min": 1.0, "max": 3.0, "mean": 2.0,
                      "norm": pytest.approx(np.sqrt(10.0), rel=1e-6)}


def _torch_statistics(tensor):
    data = tensor.detach().double()
    return {"min": data.min().item(), "max": data.max().item(), "mean": data.mean().item(),
            "norm": data.norm().item()}


@pytest.mark.parametrize("example", ["mlp", "gpt"])
def test_statistics_are_torchs_own_for_the_parameters_and_their_gradients(example):
    """Each parameter as it was before the step and each .grad as backward left it, against torch's reductions
    (the document rounds to six significant digits)."""
    model, batch, loss_fn, optimizer = fresh(example)
    before = {name: _torch_statistics(p) for name, p in model.named_parameters()}
    document = record_step(model, batch, loss_fn, optimizer)
    grads = {name: _torch_statistics(p.grad) for name, p in model.named_parameters() if p.grad is not None}
    by_name = {t["name"]: t["value"] for t in document["tensors"] if "value" in t}
    for expected, suffix in ((before, ""), (grads, ".grad")):
        for name, figures in expected.items():
            assert by_name[name + suffix] == pytest.approx(figures, rel=1e-5, abs=1e-9), name + suffix
