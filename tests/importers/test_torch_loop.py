"""`with recording(model, optimizer, step=K) as run:` records step K of the user's own loop: the document is the
one `--warmup K` records of the same step, it is written to run.json, and the loop trains as it would without it."""
import json

import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")
from torch import nn  # noqa: E402

from backend.importers.mistakes import StepError  # noqa: E402
from backend.importers.torch_checkpoint import storage_peaks  # noqa: E402
from backend.importers.torch_loop import recording  # noqa: E402
from backend.importers.torch_step import record_step  # noqa: E402
from backend.trace.document_versions import unpack  # noqa: E402

STEPS = 4


def setup():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))
    batch = (torch.randn(4, 6), torch.randn(4, 1))
    return model, batch, torch.optim.Adam(model.parameters(), lr=1e-2)


def train(model, batch, optimizer, steps=STEPS):
    """The user's loop, as written in any tutorial."""
    inputs, target = batch
    for _ in range(steps):
        loss = nn.functional.mse_loss(model(inputs), target)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


@pytest.fixture(scope="module")
def looped(tmp_path_factory):
    out = tmp_path_factory.mktemp("loop") / "run.json"
    model, batch, optimizer = setup()
    with recording(model, optimizer, step=2, out=out) as run:
        train(model, batch, optimizer)
    return model, run, out


def test_step_k_of_the_loop_is_the_step_warmup_k_records(looped):
    _, run, out = looped
    model, batch, optimizer = setup()
    warmed = record_step(model, batch, nn.functional.mse_loss, optimizer, warmup=2)
    document = run.document
    assert [(e["op"], e["scope"] if e["scope"] != "loss" else "model") for e in document["tape"]] == \
        [(e["op"], e["scope"] if e["scope"] != "loss" else "model") for e in warmed["tape"]]
    assert [s["phase"] for s in document["steps"]] == [s["phase"] for s in warmed["steps"]]
    assert document["summary"]["saved_bytes"] == warmed["summary"]["saved_bytes"]
    # the same storages' peak; the workspace torch.profiler adds is measured in each run's own window (the loop's
    # from its forward, record_step's from the recorder's setup), a few bytes of scratch apart
    assert storage_peaks(document) == storage_peaks(warmed)
    assert document["summary"]["peak_bytes"] == pytest.approx(warmed["summary"]["peak_bytes"], abs=32)
    assert document["summary"]["measured_peak_bytes"] == pytest.approx(document["summary"]["peak_bytes"], abs=32)
    assert document["loss"] == pytest.approx(warmed["loss"])
    assert document["steps"][0]["by_kind"]["optimizer"] > 0           # Adam's state, before the forward
    assert document["source"]["loop_step"] == 2
    assert unpack(json.loads(out.read_text()))["summary"] == document["summary"]


def test_the_loop_trains_as_it_would_without_the_recording(looped):
    model, _, _ = looped
    plain, batch, optimizer = setup()
    train(plain, batch, optimizer)
    for (name, p), q in zip(model.named_parameters(), plain.parameters()):
        assert torch.equal(p, q), name
    assert torch.autograd.backward.__module__ == "torch.autograd"     # the wrap is gone


def test_a_loop_that_ends_before_step_k_is_one_sentence():
    model, batch, optimizer = setup()
    with pytest.raises(StepError, match=r"the loop ran 4 steps, so step=9 was never reached"):
        with recording(model, optimizer, step=9, out=None):
            train(model, batch, optimizer)
