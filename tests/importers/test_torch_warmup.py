"""`--warmup N` records the steady-state step: N plain steps run first, so Adam's state (exp_avg, exp_avg_sq,
step) is in memory, named after its parameter and counted, before the recorded forward begins."""
import json
import textwrap

import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")

from backend.importers.torch import main  # noqa: E402
from backend.trace.document_versions import unpack  # noqa: E402

MODEL_FILE = """
    import torch
    from torch import nn

    def build():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))
        batch = (torch.randn(4, 6), torch.randn(4, 1))
        return model, batch, nn.functional.mse_loss, torch.optim.Adam(model.parameters(), lr=1e-2)
    """


def recorded(tmp_path, *flags):
    model_file, out = tmp_path / "adam.py", tmp_path / "run.json"
    model_file.write_text(textwrap.dedent(MODEL_FILE))
    assert main([str(model_file), "--out", str(out), *flags]) == 0
    return unpack(json.loads(out.read_text()))


def adam_state_bytes():
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    return 2 * params + 4 * len(list(model.parameters()))      # exp_avg and exp_avg_sq, and a float32 step each


def test_warmup_two_steps_has_adams_state_before_the_recorded_forward(tmp_path):
    document = recorded(tmp_path, "--warmup", "2")
    first_forward = min(s["index"] for s in document["steps"] if s["phase"] == "forward")
    state = [t for t in document["tensors"] if t["kind"] == "optimizer" and t["born"] <= first_forward]
    names = {t["name"] for t in state}
    for param in ("0.weight", "0.bias", "2.weight", "2.bias"):
        assert {f"{param}.exp_avg", f"{param}.exp_avg_sq", f"{param}.step"} <= names
    storages = {s["id"]: s for s in document["storages"]}
    assert sum(storages[t["storage"]]["nbytes"] for t in state) == adam_state_bytes()
    assert document["steps"][first_forward]["by_kind"]["optimizer"] == adam_state_bytes()
    assert document["source"]["warmup_steps"] == 2


def test_without_warmup_adams_state_is_born_in_the_optimizer_step(tmp_path):
    document = recorded(tmp_path)
    first_optimizer = min(s["index"] for s in document["steps"] if s["phase"] == "optimizer")
    assert all(t["born"] >= first_optimizer for t in document["tensors"] if t["kind"] == "optimizer")
    assert document["steps"][0]["by_kind"]["optimizer"] == 0


def test_a_negative_warmup_is_one_sentence(tmp_path):
    with pytest.raises(SystemExit, match=r"--warmup -1: give a whole number of steps from 0 to 100"):
        main([str(tmp_path / "unread.py"), "--warmup", "-1"])
