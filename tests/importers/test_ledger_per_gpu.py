"""The ledger's per-GPU rows (backend/ledger/parallel.py) against fake-mode recordings of the project's torch GPT
(examples/torch/gpt*.py) on 1, 2 and 8 fake ranks, at every ZeRO stage: DDP (zero 0), ZeroRedundancyOptimizer
(1), FSDP2 without and with resharding after forward (2, 3), and tensor parallelism with and without sequence
parallelism on 2 (gpt_tp.py). The ledger's config is the example's shape, its batch split over the data-parallel
ranks as the examples split it (tests/ledger/test_per_gpu.py holds the hand-worked figures).

A recording's rows: parameters, the parameter storages live when the step ends; gradients and optimizer state, the
ones the optimizer step holds (`summary.resident`), DDP's bucket copies among the gradients (the ledger's
communication buffers at zero 0 and 1); activations, every activation and input storage live when forward ends;
FSDP2's gathered parameters, whole gradients and collective buffers at the peak, under the ledger's communication
buffers (its bound: every one it names live at once). Tolerances: rows 1%; the peak, which the ledger walks a
layer at a time without the gradients of activations inside a layer or the optimizer's temporaries, 6%.

One difference is torch's and exact: at a rank's batch of 1 (8 ranks), the CPU attention's probs@v reads v as a
view of the fused q|k|v output (no copy is needed), so each block keeps all of that output, 2·s·h·4 B more than the
ledger's v row (a copy per head, as at every larger batch).
"""
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")
pytest.importorskip("torch.distributed", reason="this torch build has no torch.distributed")
pytestmark = pytest.mark.xdist_group("torch-import")

from backend.importers.torch_distributed import record_rank  # noqa: E402
from backend.importers.torch_fake import faking  # noqa: E402
from backend.importers.torch_step import load_build, record_step, step_of  # noqa: E402
from backend.ledger import parse_config  # noqa: E402
from backend.ledger.parallel import per_gpu  # noqa: E402
from backend.trace.memory_kinds import SHARDING_KINDS  # noqa: E402
from tests.ledger.test_per_gpu import BATCH, EXAMPLES, TORCH_GPT, rows_of  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CASES = [(1, 0)] + [(dp, zero) for dp in (2, 8) for zero in range(4)]


def recorded(dp, zero):
    build = load_build(ROOT / "examples" / "torch" / f"{'gpt' if dp == 1 else EXAMPLES[zero]}.py")
    with faking(dp):
        step = step_of(build)
        document = record_step(*step, warmup=1, workspace=False) if dp == 1 else record_rank(*step, warmup=1)
    return rows_recorded(document)


def rows_recorded(document):
    summary = document["summary"]
    forward_end = document["steps"][summary["forward_end_step"]]["by_kind"]
    return {
        "parameters": summary["by_kind_at_end"]["param"],
        "gradients": summary["resident"]["grads_bytes"],
        "optimizer_state": summary["resident"]["optimizer_state_bytes"],
        "activations": forward_end["activation"] + forward_end["input"],
        "sharding_at_peak": sum(summary["by_kind_at_peak"][kind] for kind in SHARDING_KINDS),
        "peak": summary["peak_bytes"],
    }


@pytest.mark.parametrize("dp,zero", CASES, ids=[f"dp{dp}-zero{zero}" for dp, zero in CASES])
def test_each_per_gpu_row_is_the_fake_recordings_within_one_percent(dp, zero):
    ledger = per_gpu(parse_config(dict(TORCH_GPT, batch=BATCH // dp, dp=dp, zero=zero)))
    rows = rows_of(ledger)
    ddp_buckets = rows["communication_buffers"] if zero < 2 else 0
    run = recorded(dp, zero)
    assert rows["parameters"] == pytest.approx(run["parameters"], rel=0.01)
    assert rows["gradients"] + ddp_buckets == pytest.approx(run["gradients"], rel=0.01)
    assert rows["optimizer_state"] == pytest.approx(run["optimizer_state"], rel=0.01)
    fused_view = 2 * TORCH_GPT["seq"] * TORCH_GPT["hidden"] * 4 * TORCH_GPT["layers"] if BATCH // dp == 1 else 0
    assert rows["activations"] + fused_view == pytest.approx(run["activations"], rel=0.01)
    if zero >= 2:
        assert 0 < run["sharding_at_peak"] <= rows["communication_buffers"]
    assert ledger["peak_bytes"] == pytest.approx(run["peak"], rel=0.06)


@pytest.mark.parametrize("sequence_parallel", [False, True], ids=["tp2", "tp2-sp"])
def test_tensor_parallel_rows_are_the_fake_recordings_within_one_percent(sequence_parallel):
    """examples/torch/gpt_tp.py on 2 fake ranks: the embedding and head split by vocabulary rows, the logits
    gathered for the loss (loss_parallel false), with and without sequence parallelism."""
    build = load_build(ROOT / "examples" / "torch" / "gpt_tp.py")
    with faking(2):
        run = rows_recorded(record_rank(*step_of(lambda: build(sequence_parallel=sequence_parallel)), warmup=1))
    ledger = per_gpu(parse_config(dict(TORCH_GPT, batch=BATCH, tp=2, sp=sequence_parallel, loss_parallel=False)))
    rows = rows_of(ledger)
    assert rows["parameters"] == run["parameters"] and rows["gradients"] == run["gradients"]
    for name in ("optimizer_state", "activations"):
        assert rows[name] == pytest.approx(run[name], rel=0.01), name
    assert ledger["peak_bytes"] == pytest.approx(run["peak"], rel=0.06)
