"""examples/torch/gpt_tp.py, the small GPT under tensor (+ sequence) parallelism on 2 gloo ranks: its gradients are
the single-process model's (dropout off, the reordered q|k|v rows put back), and a fake-mode recording of it is
the real rank's in its saved bytes, peak, resident state, every storage the real rank has, and collectives."""
import importlib.util
from collections import Counter
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")
pytest.importorskip("torch.distributed", reason="this torch build has no torch.distributed")
pytestmark = pytest.mark.xdist_group("torch-import")

from backend.importers.torch_distributed import record_rank, run_ranks  # noqa: E402
from backend.importers.torch_fake import faking  # noqa: E402
from backend.importers.torch_step import unpack_build  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "torch"
WORLD = 2


def example(name):
    spec = importlib.util.spec_from_file_location(f"tapescope_test_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def without_dropout(model):
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        if hasattr(module, "dropout") and isinstance(module.dropout, float):
            module.dropout = 0.0
    return model


def gradients(model, batch, loss_fn, world=1):
    """Each parameter's whole gradient of one forward and backward, the q|k|v rows in gpt.py's order."""
    inputs, target = batch
    loss_fn(model(inputs), target).backward()
    grads = {}
    for name, parameter in model.named_parameters():
        grad = parameter.grad
        grad = grad.full_tensor() if hasattr(grad, "full_tensor") else grad
        if name.endswith(("c_attn.weight", "c_attn.bias")) and world > 1:
            per_rank = grad.chunk(world, dim=0)                  # [q_r k_r v_r] per rank, back to [q | k | v]
            grad = torch.cat([torch.cat([part.chunk(3, dim=0)[i] for part in per_rank]) for i in range(3)])
        grads[name] = grad.detach().clone()
    return grads


def tp_gradients():
    """{sequence_parallel: this rank's gradients} for tensor parallelism without and with sequence parallelism."""
    by_mode = {}
    for sequence_parallel in (False, True):
        model, batch, loss_fn, _ = unpack_build(example("gpt_tp").build(sequence_parallel=sequence_parallel))
        by_mode[sequence_parallel] = gradients(without_dropout(model), batch, loss_fn, WORLD)
    return by_mode


@pytest.fixture(scope="module")
def tp_rank_gradients():
    """Every rank's tp_gradients(), from one pair of ranks. Fresh ranks: forked from a process that recorded a fake
    tensor-parallel step, the embedding's gradient came out wrong (a DTensor state of the fake world torch keeps,
    see torch_fake)."""
    return run_ranks(tp_gradients, WORLD, fresh=True)


@pytest.mark.parametrize("sequence_parallel", [False, True], ids=["tp", "tp_sp"])
def test_tensor_parallel_gradients_are_the_single_process_ones(sequence_parallel, tp_rank_gradients):
    model, batch, loss_fn, _ = unpack_build(example("gpt").build())
    reference = gradients(without_dropout(model), batch, loss_fn)
    for grads in (rank[sequence_parallel] for rank in tp_rank_gradients):
        assert set(grads) == set(reference)
        for name, expected in reference.items():
            torch.testing.assert_close(grads[name], expected, rtol=1e-4, atol=1e-6, msg=lambda m, name=name: f"{name}: {m}")


def real_rank():
    return record_rank(*unpack_build(example("gpt_tp").build()), warmup=1)


def test_a_fake_tensor_parallel_step_is_the_real_ranks_in_every_byte():
    # Fresh ranks: forked from this test process after tests/importers/test_distributed.py's ranks and models, a real
    # rank's backward once ran two steps in another order and its peak came out 261,120 B over the fake one's (1 run
    # in 4 to 8 of the two files in one process; never in 8 runs from a fresh process, which is what the CLI gives).
    real = run_ranks(real_rank, WORLD, fresh=True)[0]
    with faking(WORLD):
        fake = record_rank(*unpack_build(example("gpt_tp").build()), warmup=1)
    for key in ("saved_bytes", "peak_bytes"):
        assert fake["summary"][key] == real["summary"][key], key
    resident = {name: document["summary"]["resident"] for name, document in (("real", real), ("fake", fake))}
    for key in ("params", "master_weights_bytes", "grads_bytes"):
        assert resident["fake"][key] == resident["real"][key], key
    # a real rank's optimizer state at the end moves by 1,024 B from run to run (seen once in three)
    assert abs(resident["fake"]["optimizer_state_bytes"] - resident["real"]["optimizer_state_bytes"]) <= 1024
    storages = {name: Counter((s["nbytes"], s["kind"]) for s in document["storages"])
                for name, document in (("real", real), ("fake", fake))}
    assert not storages["real"] - storages["fake"]
    # what fake mode adds: views of DTensor redistributions it gives storages of their own, each freed within a
    # few steps and never held at the peak (the peaks are equal to the byte)
    peak_step = fake["summary"]["peak_step"]
    extra = storages["fake"] - storages["real"]
    assert {kind for _, kind in extra} <= {"input", "grad", "activation"}
    assert all(s["freed"] is not None and s["freed"] <= peak_step or s["born"] > peak_step
               for s in fake["storages"] if s["kind"] == "input" and s["scope"] == "input" and s["nbytes"] > 4160)
    collectives = {name: Counter(e["op"] for e in document["tape"] if e["family"] == "collective")
                   for name, document in (("real", real), ("fake", fake))}
    assert collectives["fake"] == collectives["real"] and collectives["real"]["reduce_scatter"] > 0
