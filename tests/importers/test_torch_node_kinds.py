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


def _swish(x):
    return x * torch.sigmoid(x)


class CompiledSwish(nn.Module):
    """Calls a torch.compile'd function, as models with compiled kernels do (`compiled=False`: the same, eager)."""

    def __init__(self, compiled=True):
        super().__init__()
        self.swish = torch.compile(_swish, backend="eager") if compiled else _swish

    def forward(self, x):
        return self.swish(x)


def test_a_compiled_function_inside_the_model_is_recorded_op_by_op_as_eager():
    """The recorder's dispatch mode leaves torch's disable-Dynamo wrapper off and switches Dynamo off itself
    (torch_dispatch.py): Dynamo must not compile the recorder's own frames. Under the mode, torch runs the compiled function eagerly (it warns once),
    so each of its ops is an entry with its saves, and the gradients are the eager model's."""
    def step(compiled=True):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), CompiledSwish(compiled), nn.Linear(16, 1))
        return model, (torch.randn(4, 8), torch.randn(4, 1)), nn.functional.mse_loss

    from torch._dynamo.utils import counters
    eager = step(compiled=False)
    run_step(*eager)
    packed_bytes, _ = packed_during(lambda: run_step(*step(compiled=False)))
    recorded = step()
    compiled_before = counters["frames"]["total"]
    for _ in range(2):                      # the second call is the one Dynamo would have cached a graph for
        for p in recorded[0].parameters():
            p.grad = None
        document = record_step(*recorded)
        ops = [e["op"] for e in document["tape"]]
        assert ops.count("sigmoid") == 1 and ops.count("mul") == 1, ops
        assert document["summary"]["saved_bytes"] == packed_bytes
        for mine, theirs in zip(recorded[0].parameters(), eager[0].parameters()):
            assert torch.equal(mine.grad, theirs.grad)
    # Dynamo converted the model's own function at most: without the recorder's switch it compiled 62 of its frames
    assert counters["frames"]["total"] - compiled_before <= 1
