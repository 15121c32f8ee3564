"""Saves are read from every kind of grad_fn node: a custom torch.autograd.Function exposes `saved_tensors`, not
the `_saved_*` attributes of torch's generated nodes."""
import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")
from torch import nn  # noqa: E402

from backend.importers.torch_step import record_step, run_step  # noqa: E402
from tests.importers.packed import packed_during  # noqa: E402


class SwishFunction(torch.autograd.Function):
    """x·σ(x), keeping x and σ(x) for its hand-written backward."""

    @staticmethod
    def forward(ctx, x):
        sigmoid = torch.sigmoid(x)
        ctx.save_for_backward(x, sigmoid)
        return x * sigmoid

    @staticmethod
    def backward(ctx, grad):
        x, sigmoid = ctx.saved_tensors
        return grad * sigmoid * (1 + x * (1 - sigmoid))


class Swish(nn.Module):
    def forward(self, x):
        return SwishFunction.apply(x)


def swish_step():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), Swish(), nn.Linear(16, 4), Swish(), nn.Linear(4, 1))
    return model, (torch.randn(4, 8), torch.randn(4, 1)), nn.functional.mse_loss


def test_a_custom_functions_saves_are_counted_and_named():
    packed_bytes, count = packed_during(lambda: run_step(*swish_step()))
    document = record_step(*swish_step())
    assert document["summary"]["saved_bytes"] == packed_bytes
    assert document["summary"]["packed"] == count
    custom = [e for e in document["tape"] if e["backward"] == "SwishFunctionBackward"]
    assert len(custom) == 2
    for entry in custom:
        assert entry["op"] == "mul"                 # the op that made the Function's output, not its first op
        assert len(entry["saved"]) == 2
        assert "keeps nothing" not in entry["why"] and "saved_tensors[1]" in entry["why"]
