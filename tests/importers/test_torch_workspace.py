"""Memory no tensor owns (kind workspace): what torch.profiler saw the allocator hold beyond the run's storages, such
as an LSTM's MkldnnRnnLayerBackward0 workspace, is in the document, so its peak is torch.profiler's."""
import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")
from torch import nn  # noqa: E402

from backend.importers.torch_profile import existing_bytes, plain_peak, profiled  # noqa: E402
from backend.importers.torch_recorder import _tensors  # noqa: E402
from backend.importers.torch_step import record_step, run_step, unpack_build  # noqa: E402

pytestmark = pytest.mark.xdist_group("torch-workspace")


class Sequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 32, num_layers=2)

    def forward(self, x):
        return self.lstm(x)[0]


def lstm_step():
    torch.manual_seed(0)
    return Sequence(), (torch.randn(8, 4, 16), torch.randn(8, 4, 32)), nn.functional.mse_loss, None


def profiler_peak(step):
    """torch.profiler's peak of a plain step: the allocator's most during it + what existed before it."""
    model, batch, loss_fn, optimizer = step
    existing = existing_bytes(model, _tensors(batch), optimizer)       # before the step makes optimizer state
    _, events = profiled(lambda: run_step(model, batch, loss_fn, optimizer))
    return plain_peak(events, existing)


def test_an_lstms_workspace_is_its_own_kind_and_the_peak_is_the_profilers():
    document = record_step(*lstm_step())
    measured = profiler_peak(lstm_step())
    summary = document["summary"]
    assert summary["peak_bytes"] == pytest.approx(measured, rel=0.001)
    assert summary["measured_peak_bytes"] == pytest.approx(measured, rel=0.001)
    workspace = [s for s in document["storages"] if s["kind"] == "workspace"]
    assert workspace and all(s["born"] == s["freed"] for s in workspace)
    # the recurrent kernels' workspace: most of it held while an LSTM layer's backward node runs
    at_peak = summary["peak"]["by_kind"]["workspace"]
    assert at_peak > 0.1 * summary["peak_bytes"]
    node = document["steps"][summary["peak_step"]]
    assert node["phase"] == "backward"
    assert document["tape"][node["entry"]]["op"] == "mkldnn_rnn_layer"
    without = summary["peak_bytes"] - at_peak
    assert (measured - without) / measured > 0.1           # what was missing before: ~18% of the peak


def test_a_step_under_the_callers_own_profiler_is_recorded_without_a_second_one():
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True):
        document = record_step(*lstm_step())
    assert document["summary"]["measured_peak_bytes"] is None
    assert not [s for s in document["storages"] if s["kind"] == "workspace"]


def trainer_llama():
    """The Trainer test's tiny Llama with gradient_checkpointing_enable(), one step of a dict batch under AdamW."""
    from tests.importers.test_torch_trainer import tiny_llama
    model = tiny_llama()
    model.gradient_checkpointing_enable()
    ids = torch.randint(0, 64, (2, 12), generator=torch.Generator().manual_seed(0))
    return model, {"input_ids": ids, "labels": ids}, None, torch.optim.AdamW(model.parameters(), lr=1e-3)


def other_models():
    from tests.importers.test_torch_flops import conv_step
    from tests.importers.test_torch_names import tagger_step
    from tests.importers.test_torch_node_kinds import swish_step
    from tests.importers.test_torch_self_checkpointing import step as checkpointing_step
    from tests.importers.test_torch_t5 import resnet_like, tiny_t5
    return {"resnet_like": lambda: unpack_build(resnet_like()), "tagger": tagger_step, "t5": tiny_t5,
            "custom_function": lambda: unpack_build(swish_step()), "conv": lambda: unpack_build(conv_step()),
            "self_checkpointing": lambda: unpack_build(checkpointing_step(checkpointed=True)),
            "trainer_llama": trainer_llama}


@pytest.mark.filterwarnings("ignore:`gradient_checkpointing_enable` is deprecated:FutureWarning")
@pytest.mark.parametrize("name", ["resnet_like", "tagger", "t5", "custom_function", "conv", "self_checkpointing",
                                  "trainer_llama"])
def test_the_peak_is_the_profilers_on_the_other_importer_test_models(name):
    if name == "trainer_llama":
        pytest.importorskip("transformers", reason="transformers is an optional extra (pip install -r requirements-torch.txt)")
        pytest.importorskip("accelerate", reason="Trainer needs accelerate (pip install -r requirements-torch.txt)")
    build = other_models()[name]
    document = record_step(*build())
    # within 0.1%, or 16 B on the small models: the recorded run's allocator holds two 4-byte scalars more than the
    # plain step's at the peak on the tagger (6,084 vs 6,076 B), the custom Function (2,880 vs 2,872 B, in its
    # hand-written backward's scalar arithmetic) and the tiny Llama (+8 B of 124 KB); not explained yet
    assert document["summary"]["peak_bytes"] == pytest.approx(profiler_peak(build()), rel=0.001, abs=16)
