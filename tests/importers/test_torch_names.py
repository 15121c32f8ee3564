"""Every tensor of an imported step is named as the user's code or torch names it: a dict batch's tensors by their
keys, a transpose after what it transposes, a constant after the op reading it, a backward or optimizer temporary by
its op and step, the optimizer's new state after its parameter; and an empty's output (uninitialized memory) is
described when an op first writes into it, so its statistics are the same run to run."""
import re

import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")
from torch import nn  # noqa: E402

from backend.importers.torch_recorder import batch_names  # noqa: E402
from backend.importers.torch_step import record_step  # noqa: E402

FILL = 3.0


class Tagger(nn.Module):
    """Called as model(**batch) with a dict batch, as a Hugging Face model is."""

    def __init__(self):
        super().__init__()
        self.embed, self.drop, self.head = nn.Embedding(16, 8), nn.Dropout(0.5), nn.Linear(8, 16)

    def forward(self, input_ids, labels):
        hidden = self.drop(self.embed(input_ids)) * torch.tensor(0.5)     # a constant no op made
        filled = torch.empty_like(hidden).fill_(FILL)                       # uninitialized until fill_ writes it
        logits = self.head(hidden + filled)
        return nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())


def tagger_step():
    torch.manual_seed(0)
    model = Tagger()
    batch = {"input_ids": torch.randint(0, 16, (2, 5)), "labels": torch.randint(0, 16, (2, 5))}
    return model, batch, None, torch.optim.AdamW(model.parameters(), lr=1e-3)


@pytest.fixture(scope="module")
def document():
    return record_step(*tagger_step())


def test_a_dict_batch_is_named_by_its_keys(document):
    inputs = [t["name"] for t in document["tensors"] if t["kind"] == "input" and t["scope"] == "input"]
    assert inputs[:2] == ["input_ids", "labels"]
    x, y = torch.zeros(1), torch.ones(1)
    assert list(batch_names((x, y))) == ["batch[0]", "batch[1]"] and list(batch_names(x)) == ["batch"]
    assert list(batch_names(({"input_ids": x}, y))) == ["batch[0].input_ids", "batch[1]"]


def test_no_tensor_is_left_with_an_id_for_a_name(document):
    names = [t["name"] for t in document["tensors"]]
    assert not [name for name in names if re.fullmatch(r"t\d+", name)]
    assert "head.weight.t()" in names                      # Linear's transpose of its weight
    constant = next(t for t in document["tensors"] if t["shape"] == [] and t["kind"] == "input")
    assert re.fullmatch(r"lift_fresh\d+\.input0", constant["name"])
    optimizer = {t["name"] for t in document["tensors"] if t["kind"] == "optimizer"}
    params = [name for name, _ in tagger_step()[0].named_parameters()]
    state = {f"{p}.{key}" for p in params for key in ("exp_avg", "exp_avg_sq", "step")}
    assert state <= optimizer                              # a first step's state, named after its parameter
    for name in optimizer - state:                         # AdamW's temporaries: op@step, that step an optimizer one
        op, step = re.fullmatch(r"(\w+)@(\d+)", name).groups()
        assert document["steps"][int(step)]["phase"] == "optimizer"
    grads = [t["name"] for t in document["tensors"] if t["kind"] == "grad" and t.get("grad_of") is None]
    assert all(re.fullmatch(r"\w+@\d+", name) for name in grads), grads


def test_an_empty_is_described_when_first_written(document):
    fill = next(e for e in document["tape"] if e["op"] == "fill_")
    filled = document["tensors"][fill["inputs"][0]]
    assert filled["name"].startswith("empty_like") and (filled["value"]["min"], filled["value"]["max"]) == (FILL, FILL)
    mask = document["tensors"][next(e for e in document["tape"] if e["op"] == "bernoulli_")["inputs"][0]]
    assert mask["name"].startswith("empty_like") and {mask["value"]["min"], mask["value"]["max"]} == {0.0, 1.0}
    again = record_step(*tagger_step())
    empties = [[t.get("value") for t in d["tensors"] if t["name"].startswith("empty_like")] for d in (document, again)]
    assert empties[0] == empties[1]
