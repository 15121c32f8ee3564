"""The ledger per GPU (backend/ledger/parallel.py, fits.py, megatron.py): hand-worked figures, and every row against
a fake-mode recording of the project's torch GPT (examples/torch/gpt*.py) on 1, 2 and 8 fake ranks at each ZeRO
stage: DDP (zero 0), ZeroRedundancyOptimizer (1), FSDP2 without and with resharding after forward (2, 3).

What a recording's rows are: parameters, the parameter storages live at the end of the step; gradients, the ones
held at the optimizer step (`summary.resident`), DDP's buckets among them (the ledger's communication buffers at
zero 0 and 1); optimizer state, the same; activations, every activation and input storage live when forward ends.
"""
import dataclasses
from pathlib import Path

import pytest

from backend.ledger import build_ledger, parse_config
from backend.ledger.config import MODEL_PRESETS, PRESET_COMMON
from backend.ledger.megatron import megatron
from backend.ledger.params import param_count
from backend.ledger.parallel import per_gpu, stages

ROOT = Path(__file__).resolve().parents[2]
# examples/torch/gpt.py's shape: 4 blocks of width 256, 4 heads, vocab 128, 64 tokens, dropout everywhere (torch's
# CPU dropout: float masks), SDPA with dropout (on CPU its math path: the seq × seq matrices are saved), AdamW.
TORCH_GPT = dict(layers=4, hidden=256, heads=4, mlp_ratio=4, vocab=128, seq=64, attention="naive", dropout=True,
                 masks="dtype", embedding_dropout=True)
BATCH = 8                   # the example's batch, split over the data-parallel ranks
EXAMPLES = {0: "gpt_ddp", 1: "gpt_zero1", 2: "gpt_fsdp_keep", 3: "gpt_fsdp"}
LLAMA = {**PRESET_COMMON, **{k: v for k, v in MODEL_PRESETS["llama2-7b"].items() if k != "title"}}


def rows_of(result):
    return {row["name"]: row["bytes"] for row in result["rows"]}


def test_llama_2_7b_has_its_published_parameter_count_and_shards_by_eight():
    config = parse_config(dict(LLAMA, batch=1, dtype="bf16", mixed_precision=True, attention="flash", dp=8, zero=3))
    assert param_count(config) == 6_738_415_616
    rows = rows_of(per_gpu(config))
    share = -(-6_738_415_616 // 8)
    assert rows["parameters"] == rows["gradients"] == share * 2
    assert rows["optimizer_state"] == share * (4 + 8)              # fp32 master and two fp32 moments


def test_zero_1_deals_whole_tensors_largest_first_and_reports_the_most_loaded_rank():
    """GPT's blocks at dp = 8: eight 4h × h MLP matrices go one to each rank, the four fused q|k|v matrices (3h²)
    to ranks 0–3, so the most loaded rank keeps the moments of 4h² + 3h² elements: more than 1/8."""
    config = parse_config(dict(TORCH_GPT, batch=1, dp=8, zero=1))
    h = 256
    assert rows_of(per_gpu(config))["optimizer_state"] == (4 * h * h + 3 * h * h) * 8
    assert (4 * h * h + 3 * h * h) > param_count(config) / 8


def test_a_pipeline_s_first_stage_holds_a_micro_batch_per_stage_and_interleaving_adds_megatron_s_penalty():
    base = dict(TORCH_GPT, layers=8, batch=1, pp=4, micro_batches=8)
    plain = stages(parse_config(base))
    assert [stage.in_flight for stage in plain] == [4, 3, 2, 1]
    assert [stage.layers for stage in plain] == [2, 2, 2, 2]
    interleaved = stages(parse_config(dict(base, vpp=2)))
    assert interleaved[0].in_flight == 4 * (1 + 3 / 8)
    few = stages(parse_config(dict(base, micro_batches=2)))
    assert [stage.in_flight for stage in few] == [2, 2, 2, 1]


def test_tensor_parallel_splits_heads_and_features_and_sequence_parallel_the_residual_stream():
    one = per_gpu(parse_config(dict(TORCH_GPT, batch=8)))
    two = per_gpu(parse_config(dict(TORCH_GPT, batch=8, tp=2)))
    two_sp = per_gpu(parse_config(dict(TORCH_GPT, batch=8, tp=2, sp=True)))
    act = [rows_of(r)["activations"] for r in (one, two, two_sp)]
    assert act[0] > act[1] > act[2] > act[0] / 2 * 0.9
    params = [rows_of(r)["parameters"] for r in (one, two)]
    assert params[0] / 2 < params[1] < params[0]                    # norms and row-parallel biases stay whole


def test_megatron_s_figure_is_its_formula_with_its_five_percent():
    config = parse_config(dict(LLAMA, batch=1, dtype="bf16", mixed_precision=True, attention="flash", dp=8, zero=1))
    figure = megatron(config)
    assert figure["overhead_factor"] == 1.05
    shard = 32 * (2 * 4096 * (11008 * 1.5 + 1) + 2 * 4096 * 4096 * 2) + 4096 + 2 * 4096 * 32000
    assert figure["weight_and_optimizer_bytes"] == round(shard * (6 + 12 / 8))
    s, b, h = 4096, 1, 4096
    activations = (s * b * h * 34 * 32 + 8 * s * b + s * b * h + (s * b * 32000 + s * b * h) * 2) * 1.05
    assert figure["activation_bytes"] == round(activations)


def test_the_seed_s_question_seven_billion_on_eight_80_gb_cards():
    """Llama 2 7B at micro-batch 1 × 4,096 tokens in bf16 with fp32 master weights and Adam: plain data parallel
    does not fit (16 B/param is 108 GB), sharding the optimizer state does."""
    ledger = build_ledger(parse_config(dict(LLAMA, batch=1, dtype="bf16", mixed_precision=True, attention="flash",
                                            device_gib=80, gpus=8)))
    table = {(r["dp"], r["zero"], r["tp"], r["pp"], r["recompute"]): r for r in ledger["fits"]["rows"]}
    assert not table[(8, 0, 1, 1, "none")]["fits"]
    assert table[(8, 1, 1, 1, "none")]["fits"] and table[(8, 3, 1, 1, "none")]["fits"]
    assert ledger["fits"]["rows"][0]["fits"] and ledger["fits"]["tried"] == len(ledger["fits"]["rows"])
    assert table[(8, 3, 1, 1, "none")]["peak_bytes"] < table[(8, 1, 1, 1, "none")]["peak_bytes"]


def test_record_this_configuration_names_the_example_that_is_this_model_or_says_to_bring_one():
    from backend.ledger.record import record_command
    for dp, zero in [(1, 0), (2, 0), (2, 1), (8, 2), (8, 3)]:
        command = record_command(parse_config(dict(TORCH_GPT, batch=BATCH // dp, dp=dp, zero=zero)))
        expected = "gpt.py" if dp == 1 else f"{EXAMPLES[zero]}.py"
        assert command["example"] and f"examples/torch/{expected} --fake" in command["command"]
        assert (ROOT / "examples" / "torch" / expected).exists()
        assert (f"--world-size {dp}" in command["command"]) == (dp > 1)
    tp = record_command(parse_config(dict(TORCH_GPT, batch=BATCH, tp=2, sp=True, loss_parallel=False)))
    assert "examples/torch/gpt_tp.py --fake --world-size 2" in tp["command"]
    small = record_command(parse_config(dict(LLAMA, layers=2, seq=256, batch=1, dtype="bf16", mixed_precision=True,
                                             attention="flash", dp=8, zero=3)))
    assert small["command"].startswith("TAPESCOPE_LLAMA_LAYERS=2 TAPESCOPE_LLAMA_SEQ=256 ")
    assert "examples/torch/llama7b_fsdp.py --fake --world-size 8" in small["command"]
    stages = record_command(parse_config(dict(TORCH_GPT, batch=2, pp=2, micro_batches=4, tied_embeddings=False)))
    assert stages["example"] and stages["command"].count("examples/torch/gpt_pipeline.py --fake --world-size 2") == 2
    assert "--rank 0" in stages["command"] and "--rank 1" in stages["command"]
    assert not record_command(parse_config(dict(TORCH_GPT, batch=2, pp=2, micro_batches=4)))["example"]   # tied
    other = record_command(parse_config({"dp": 4, "tp": 2}))
    assert not other["example"] and "your_model.py --fake --world-size 8" in other["command"]


def test_the_widest_fits_search_is_bounded_and_counts_only_the_stages_that_can_peak():
    """512 layers on 65,536 GPUs: every dp · tp · pp layout (808 here), each computing three stages, not pp."""
    ledger = build_ledger(parse_config(dict(layers=512, hidden=65536, heads=1024, gpus=65536, batch=1, seq=1024)))
    assert ledger["fits"]["tried"] == 808 and len(ledger["fits"]["rows"]) == 200
    deep = per_gpu(parse_config(dict(TORCH_GPT, layers=16, batch=1, pp=8, micro_batches=8)))
    assert set(deep["stage_peaks"]) == {"0", "1", "7"} and deep["stage"] in (0, 1, 7)
    everyone = [per_gpu(parse_config(dict(TORCH_GPT, layers=16, batch=1, pp=8, micro_batches=8)), [stage])
                for stage in stages(parse_config(dict(TORCH_GPT, layers=16, batch=1, pp=8, micro_batches=8)))]
    assert max(r["peak_bytes"] for r in everyone) == deep["peak_bytes"]
