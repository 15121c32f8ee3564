"""A transformers Trainer: RecordingCallback records step K of a real Trainer.train() on a tiny random Llama (built
from its config, no downloads), and with gradient checkpointing on, each decoder layer runs once in forward and
once in its recompute (its MLP's forward counted), every step, the recorded one included."""
import json

import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")
transformers = pytest.importorskip("transformers", reason="transformers is an optional extra "
                                                          "(pip install -r requirements-torch.txt)")
pytest.importorskip("accelerate", reason="Trainer needs accelerate (pip install -r requirements-torch.txt)")

from backend.importers.torch_trainer import RecordingCallback  # noqa: E402
from backend.trace.document_versions import pack, unpack  # noqa: E402
from backend.trace.intake import load_posted_document  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:`gradient_checkpointing_enable` is deprecated:FutureWarning")
LAYERS, STEPS, RECORDED = 2, 3, 1


def tiny_llama():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=LAYERS,
                                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32,
                                      use_cache=False)
    return transformers.LlamaForCausalLM(config)


def train(tmp_path, checkpointing):
    model = tiny_llama()
    if checkpointing:
        model.gradient_checkpointing_enable()       # the call (v5 names it activation_checkpointing_enable)
    calls = [0] * LAYERS
    for i, layer in enumerate(model.model.layers):     # v5 checkpoints forward, not __call__: count inside it
        layer.mlp.register_forward_pre_hook(lambda module, args, i=i: calls.__setitem__(i, calls[i] + 1))
    data = [{"input_ids": ids, "labels": ids} for ids in torch.randint(0, 64, (8, 12))]
    args = transformers.TrainingArguments(output_dir=str(tmp_path / "trainer"), max_steps=STEPS,
                                          per_device_train_batch_size=2, learning_rate=1e-3, report_to=[],
                                          save_strategy="no", logging_strategy="no", disable_tqdm=True,
                                          use_cpu=True, seed=0)
    callback = RecordingCallback(step=RECORDED, out=tmp_path / "run.json")
    transformers.Trainer(model=model, args=args, train_dataset=data, callbacks=[callback]).train()
    return callback, calls


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return {checkpointing: train(tmp_path_factory.mktemp(f"trainer{checkpointing}"), checkpointing)
            for checkpointing in (False, True)}


def test_the_callback_records_step_k_of_trainer_train(trained, tmp_path):
    callback, calls = trained[False]
    document = callback.document
    assert calls == [STEPS] * LAYERS
    assert document["source"]["loop_step"] == RECORDED
    assert document["source"]["optimizer"] == "AdamW"
    assert document["steps"][0]["by_kind"]["optimizer"] > 0       # AdamW's state from step 0, before the forward
    assert {s["phase"] for s in document["steps"]} == {"forward", "backward", "optimizer"}
    posted = json.loads(json.dumps(pack(document)))
    assert load_posted_document(posted) == unpack(posted)


def test_gradient_checkpointing_recomputes_each_layer_once_per_step(trained):
    callback, calls = trained[True]
    assert calls == [2 * STEPS] * LAYERS              # once in forward and once in its recompute, every step
    document = callback.document
    regions = document["checkpoint_regions"]
    assert len(regions) == LAYERS
    for region in regions:
        first, end = region["entries"]
        assert first <= region["recomputed_in"] < end and region["recompute_entries"]
        assert any(document["tape"][i].get("recomputes") for i in range(first, end))
        assert all(document["tape"][i]["saved"] == [] for i in range(first, end))
    posted = json.loads(json.dumps(pack(document)))
    assert load_posted_document(posted) == unpack(posted)
