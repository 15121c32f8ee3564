"""The torch recorder is a RecordedRun, and its documents are built from the declared attributes only."""
import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")
pytestmark = pytest.mark.xdist_group("torch-import")

from backend.importers import torch_step  # noqa: E402
from backend.importers.torch_recorder import TorchRecorder  # noqa: E402
from backend.trace.records import RecordedRun  # noqa: E402
from tests.trace.test_records import through_the_declaration  # noqa: E402



def test_the_torch_recorder_is_a_recorded_run():
    assert isinstance(TorchRecorder(), RecordedRun)


def test_a_torch_document_reads_only_the_declared_attributes(monkeypatch):
    def recorded():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
        batch = (torch.randn(4, 8), torch.randn(4, 1))
        optimizer = torch.optim.Adam(model.parameters())
        # workspace=False: no torch.profiler run, whose allocator counts may move between two identical steps
        document = torch_step.record_step(model, batch, torch.nn.functional.mse_loss, optimizer, values=True,
                                          workspace=False)
        for storage in document["storages"]:
            del storage["address"]                  # the allocator's pointers, another each run
        for tensor in document["tensors"]:
            del tensor["address"]
        return document

    plain = recorded()
    through_the_declaration(monkeypatch, torch_step, "build_document")
    assert recorded() == plain
