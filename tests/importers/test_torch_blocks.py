"""Blocks for a checkpoint what-if are found in ModuleLists and Sequentials (the longest run of same-class
children), and a model with none is told, with its own module paths, what --blocks could name."""
import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")
from torch import nn  # noqa: E402

from backend.importers.torch_blocks import BlocksError, find_blocks  # noqa: E402
from backend.importers.torch_checkpoint import parse_policies, what_ifs  # noqa: E402


class Residual(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(width, width), nn.Tanh())

    def forward(self, x):
        return x + self.mlp(x)


def residual_stack():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), Residual(8), Residual(8), Residual(8), nn.Linear(8, 1))
    return model, (torch.randn(2, 4), torch.randn(2, 1)), nn.functional.mse_loss


def test_a_sequential_of_residual_blocks_is_checkpointed_block_by_block():
    assert find_blocks(residual_stack()[0]) == ["1", "2", "3"]
    found = what_ifs(residual_stack, parse_policies("every_k=1"))
    schedule = found.document["schedules"][1]
    assert schedule["regions"] == [["1"], ["2"], ["3"]] and schedule["grads_match"]


def test_the_longest_runs_class_wins_with_every_run_of_it_and_a_lone_layer_is_no_block():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))
    assert find_blocks(model) == []
    model.add_module("deep", nn.ModuleList([Residual(4), Residual(4), nn.Linear(4, 4)]))
    model.add_module("deeper", nn.Sequential(*(Residual(4) for _ in range(3))))
    # deeper's run of three Residuals is the longest: its class's other run (deep's two) comes too, deep's Linear not
    assert find_blocks(model) == ["deep.0", "deep.1", "deeper.0", "deeper.1", "deeper.2"]


def test_with_no_blocks_the_hint_names_the_models_own_modules():
    def plain():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        return model, (torch.randn(2, 4), torch.randn(2, 1)), nn.functional.mse_loss
    with pytest.raises(BlocksError, match=r"--blocks 0,1$"):
        what_ifs(plain, parse_policies("every_k=1"))
