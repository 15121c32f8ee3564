"""Checkpoint what-ifs on models people bring: a tiny random T5 (both stacks' blocks found, use_cache turned off and
said, every_k=1 runs), a block whose recompute saves other tensors (one sentence, not torch's CheckpointError), HF
blocks that do not chain under every_k=2 (one sentence), and a ResNet-like model whose BasicBlocks sit in four
Sequentials that are the model's own children."""
import json

import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")
from torch import nn  # noqa: E402

from backend.importers.torch_blocks import block_runs, find_blocks  # noqa: E402
from backend.importers.torch_checkpoint import RecomputeMismatch, parse_policies, regions_of, what_ifs  # noqa: E402
from backend.trace.document_versions import pack, unpack  # noqa: E402
from backend.trace.intake import load_posted_document  # noqa: E402

pytestmark = pytest.mark.xdist_group("torch-t5")


def tiny_t5():
    transformers = pytest.importorskip("transformers", reason="transformers is an optional extra "
                                                              "(pip install -r requirements-torch.txt)")
    torch.manual_seed(0)
    config = transformers.T5Config(vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
                                   num_heads=4, dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0)
    model = transformers.T5ForConditionalGeneration(config)
    batch = {"input_ids": torch.randint(0, 64, (2, 8)), "labels": torch.randint(0, 64, (2, 6))}
    return model, batch, None, torch.optim.AdamW(model.parameters(), lr=1e-3)


def test_t5_checkpoints_both_stacks_with_use_cache_off_and_says_so():
    model = tiny_t5()[0]
    assert model.config.use_cache          # T5's default: the decoder keeps a KV cache
    assert find_blocks(model) == ["encoder.block.0", "encoder.block.1", "decoder.block.0", "decoder.block.1"]
    found = what_ifs(tiny_t5, parse_policies("every_k=1"))
    document = found.document
    changed = document["source"]["changed"]["use_cache"]
    assert (changed["from"], changed["to"]) == (True, False) and "KV cache" in changed["why"]
    schedule = document["schedules"][1]
    assert schedule["regions"] == [[path] for path in find_blocks(model)] and schedule["grads_match"]
    executed = found.runs[0][1]
    assert len(executed["checkpoint_regions"]) == 4        # torch ran each block's recompute
    assert schedule["predicted_peak_bytes"] == schedule["executed_peak_bytes"]
    posted = json.loads(json.dumps(pack(document)))          # as the command line writes it
    assert load_posted_document(posted) == unpack(posted)    # the server accepts it, source.changed included


def test_every_k_2_on_blocks_that_return_tuples_is_one_sentence():
    with pytest.raises(RecomputeMismatch, match=r"^--checkpoint every_k=2: encoder\.block\.0 returns a tuple, not the "
                                                r"tensor encoder\.block\.1 takes next .*use every_k=1 or selective"):
        what_ifs(tiny_t5, parse_policies("every_k=2"))


class Forgetful(nn.Module):
    """A block whose forward depends on how often it ran: its recompute saves less than its forward did."""

    def __init__(self, width):
        super().__init__()
        self.linear, self.calls = nn.Linear(width, width), 0

    def forward(self, x):
        self.calls += 1
        y = self.linear(x)
        return y.tanh().tanh() if self.calls % 2 == 1 else y.tanh()     # its recompute is a second call


def forgetful():
    torch.manual_seed(0)
    model = nn.Sequential(Forgetful(4), Forgetful(4))
    return model, (torch.randn(3, 4), torch.randn(3, 4)), nn.functional.mse_loss


def test_a_recompute_that_saves_other_tensors_is_one_sentence():
    with pytest.raises(RecomputeMismatch, match=r"^--checkpoint every_k=1: torch's checkpoint re-ran a region of "
                                                r"0, 1 and it saved other tensors than its forward did \(\d+ vs \d+ "
                                                r"tensors saved\).*name other blocks with --blocks$"):
        what_ifs(forgetful, parse_policies("every_k=1"))


class BasicBlock(nn.Module):
    def __init__(self, channels_in, channels, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(channels_in, channels, 3, stride, 1, bias=False)
        self.bn1, self.relu = nn.BatchNorm2d(channels), nn.ReLU()
        self.conv2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.downsample = None
        if stride != 1 or channels_in != channels:
            self.downsample = nn.Sequential(nn.Conv2d(channels_in, channels, 1, stride, bias=False),
                                            nn.BatchNorm2d(channels))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x))))) + identity)


class ResNetLike(nn.Module):
    """torchvision's ResNet's shape (torchvision is not installed): layer1..layer4 are the model's own children, each
    a Sequential of two BasicBlocks."""

    def __init__(self):
        super().__init__()
        self.conv1, self.bn1, self.relu = nn.Conv2d(3, 4, 3, 1, 1, bias=False), nn.BatchNorm2d(4), nn.ReLU()
        self.layer1 = nn.Sequential(BasicBlock(4, 4), BasicBlock(4, 4))
        self.layer2 = nn.Sequential(BasicBlock(4, 8, 2), BasicBlock(8, 8))
        self.layer3 = nn.Sequential(BasicBlock(8, 8, 2), BasicBlock(8, 8))
        self.layer4 = nn.Sequential(BasicBlock(8, 8), BasicBlock(8, 8))
        self.avgpool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(8, 3)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


def resnet_like():
    torch.manual_seed(0)
    return ResNetLike(), (torch.randn(2, 3, 8, 8), torch.tensor([0, 2])), nn.functional.cross_entropy


def test_resnets_basic_blocks_are_found_in_every_layer_and_every_k_2_checkpoints_each_layer():
    paths = find_blocks(resnet_like()[0])
    # every BasicBlock (not the downsample's lone Conv2d/BatchNorm pair, which is one block's own Sequential)
    assert paths == [f"layer{layer}.{i}" for layer in range(1, 5) for i in range(2)]
    assert block_runs(paths) == [2, 2, 2, 2]
    assert regions_of({"policy": "every_k", "params": {"k": 3}}, 8, block_runs(paths)) == \
        [[0, 1], [2, 3], [4, 5], [6, 7]]             # a region never crosses from one layer into the next
    found = what_ifs(resnet_like, parse_policies("every_k=1,every_k=2"))
    every_1, every_2 = found.document["schedules"][1:]
    assert every_1["regions"] == [[path] for path in paths]
    assert every_2["regions"] == [[f"layer{layer}.0", f"layer{layer}.1"] for layer in range(1, 5)]
    assert every_1["grads_match"] and every_2["grads_match"]
