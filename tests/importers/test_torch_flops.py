"""An imported step's FLOPs are torch's own count (torch.utils.flop_counter) for every op torch has a formula for,
ours only for the rest, and each count says whose it is."""
import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")
from torch import nn  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from backend.importers.torch_step import record_step, run_step  # noqa: E402


def conv_step():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, stride=2), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))
    return model, (torch.randn(2, 3, 16, 16), torch.randint(0, 10, (2,))), nn.functional.cross_entropy


def test_a_conv_nets_flops_are_flop_counter_modes():
    with FlopCounterMode(display=False) as counter:
        run_step(*conv_step())
    by_op = counter.get_flop_counts()["Global"]
    document = record_step(*conv_step())
    summary = document["summary"]
    assert summary["flops_by_source"]["torch"] == counter.get_total_flops()        # forward + backward
    convolutions = [e for e in document["tape"] if e["op"] == "convolution"]
    assert sum(e["flops"] for e in convolutions) == by_op[torch.ops.aten.convolution]
    assert {e["flops_source"] for e in convolutions} == {"torch"}
    assert {e["flops_source"] for e in document["tape"] if e["op"] == "relu"} == {"tapescope"}
    conv_backward = [item for item in document["sweep"] if item["backward"] == "ConvolutionBackward0"]
    assert sum(item["flops_by_source"]["torch"] for item in conv_backward) == by_op[torch.ops.aten.convolution_backward]
    assert summary["forward_flops"] + summary["backward_flops"] == sum(summary["flops_by_source"].values())


class LastHidden(nn.Module):
    def __init__(self, lstm):
        super().__init__()
        self.lstm = lstm

    def forward(self, x):
        return self.lstm(x)[0].sum()


def test_an_lstm_layers_flops_are_its_unrolled_cells():
    """torch has no formula for CPU's fused mkldnn_rnn_layer: ours counts its gate products, which are what
    FlopCounterMode counts for the same layer run cell by cell."""
    torch.manual_seed(0)
    lstm, x = nn.LSTM(6, 5, batch_first=True), torch.randn(3, 7, 6)
    cell = nn.LSTMCell(6, 5)
    with FlopCounterMode(display=False) as counter:
        hidden = (torch.zeros(3, 5), torch.zeros(3, 5))
        for t in range(x.shape[1]):
            hidden = cell(x[:, t], hidden)
    layer = next(e for e in record_step(LastHidden(lstm), x)["tape"] if e["op"] == "mkldnn_rnn_layer")
    assert (layer["flops"], layer["flops_source"]) == (counter.get_total_flops(), "tapescope")
