"""Recording without the hardware (--fake, backend/importers/torch_fake.py): under FakeTensorMode the recorded step
is the real one in every byte and step, without values; on torch's fake process group, FSDP2's step is the one
its real ranks record over gloo; a Llama-shaped decoder shards as FSDP2 says; flags that cannot combine are one
sentence; its peak is torch's FSDPMemTracker's. The full 7B on 8 fake ranks is bench/torch_fake.py's (its time and
memory against the goal, and the tracker: equal to the byte, 35,712,326,812 B)."""
import json
import re
from collections import Counter

import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")
dist = pytest.importorskip("torch.distributed", reason="this torch build has no torch.distributed")
pytestmark = pytest.mark.xdist_group("torch-import")

from backend.importers.torch import main  # noqa: E402
from backend.importers.torch_distributed import record_rank, run_ranks  # noqa: E402
from backend.importers.torch_fake import faking  # noqa: E402
from backend.importers.torch_step import load_build, record_step, step_of  # noqa: E402
from backend.trace.document_versions import unpack  # noqa: E402
from tests.importers import distributed_model  # noqa: E402
from tests.importers.fsdp_tracker import tracker_peak  # noqa: E402
from tests.importers.test_torch_import import ROOT  # noqa: E402

LLAMA = ROOT / "examples" / "torch" / "llama7b_fsdp.py"


def lifetimes(document):
    return [(s["nbytes"], s["kind"], s["born"], s["freed"], s.get("shard_role")) for s in document["storages"]]


def tape(document):
    return [(e["op"], e["phase"], e["scope"]) for e in document["tape"]]


@pytest.mark.parametrize("example", ["gpt", "transformer_tiny"])
def test_a_fake_step_is_the_real_step_in_every_byte_and_step_without_values(example):
    """Every storage's bytes, kind and lifetime, every step's live bytes, the tape and the saved bytes as the real
    step records them. (Not mlp or residual: CPU's mse_loss kernel returns its 0-d loss in a storage as big as its
    input, 128 B where the meta kernel's is 4 B; cross-entropy's is the same both ways.)"""
    build = load_build(ROOT / "examples" / "torch" / f"{example}.py")
    real = record_step(*step_of(build), warmup=1, workspace=False)
    with faking():
        fake = record_step(*step_of(build), warmup=1, workspace=False)
    assert lifetimes(fake) == lifetimes(real)
    assert [s["live_bytes"] for s in fake["steps"]] == [s["live_bytes"] for s in real["steps"]]
    assert tape(fake) == tape(real)
    assert fake["summary"]["saved_bytes"] == real["summary"]["saved_bytes"]
    assert fake["summary"]["peak_bytes"] == real["summary"]["peak_bytes"]
    assert not any("value" in t for t in fake["tensors"]) and fake["loss"] is None
    assert all("value" in t for t in real["tensors"] if t["kind"] == "param")


def _real_fsdp_rank():
    model, batch, loss_fn, optimizer = distributed_model.build("fsdp")
    return record_rank(model, batch, loss_fn, optimizer, warmup=1)


def test_fsdp2_on_fake_ranks_records_what_its_real_ranks_record_over_gloo():
    """The tape (collectives included) and the saved bytes as rank 0 of a real 2-rank gloo run records them, its
    storages (bytes, kind, sharding role) but for the loss's (see above) and the copies gloo makes of a gradient
    it reduce-scatters on CPU (the fake group, like NCCL, makes none), and the peak below the real one's by the
    loss's difference and what gloo's threads add.
    Not the step numbers: a real rank's frees land in steps of their own as gloo's threads let go of buffers
    (tests/importers/test_distributed.py), a fake collective returns at once."""
    real = run_ranks(_real_fsdp_rank, 2)[0]
    with faking(2):
        fake = record_rank(*distributed_model.build("fsdp"), warmup=1)
    assert not dist.is_initialized()            # faking() took its process group down with it
    assert tape(fake) == tape(real)
    assert fake["summary"]["saved_bytes"] == real["summary"]["saved_bytes"]
    storages = {name: Counter((s["nbytes"], s["kind"], s.get("shard_role") or "") for s in document["storages"])
                for name, document in (("real", real), ("fake", fake))}
    loss_bytes = distributed_model.BATCH // 2 * distributed_model.SEQ * 4       # CPU's mse_loss: its input's size
    assert storages["fake"] - storages["real"] == Counter({(4, "activation", ""): 1})
    real_only = storages["real"] - storages["fake"]
    assert real_only.pop((loss_bytes, "activation", "")) == 1
    assert real_only and {kind for _, kind, _ in real_only} == {"grad"}     # gloo's copies
    # a real rank's peak moves by up to 1.7% run to run (when gloo's threads free a buffer); the fake one does not
    assert loss_bytes - 4 <= real["summary"]["peak_bytes"] - fake["summary"]["peak_bytes"] <= 0.02 * fake["summary"]["peak_bytes"]
    assert fake["mesh"] == real["mesh"] and (fake["rank"], fake["world_size"]) == (0, 2)


def test_a_llama_shaped_decoder_on_8_fake_ranks_holds_an_eighth_of_every_parameter(tmp_path, monkeypatch):
    """The 7B example's code at a small size (2 layers, width 256), through the command line: rank 0's parameter
    shards are 1/8 of the model's fp32 parameters, AdamW's state twice that, the all-gathered parameters bf16
    (the mixed-precision policy), every layer's all-gather and reduce-scatter on the tape."""
    sizes = {"LAYERS": 2, "WIDTH": 256, "HEADS": 4, "HIDDEN": 688, "VOCAB": 1000, "SEQ": 64}
    for name, value in sizes.items():
        monkeypatch.setenv(f"TAPESCOPE_LLAMA_{name}", str(value))
    out = tmp_path / "run.json"
    assert main([str(LLAMA), "--fake", "--world-size", "8", "--warmup", "1", "--out", str(out)]) == 0
    document = unpack(json.loads(out.read_text()))
    width, hidden, vocab = sizes["WIDTH"], sizes["HIDDEN"], sizes["VOCAB"]
    parameters = 2 * vocab * width + width + sizes["LAYERS"] * (4 * width * width + 3 * width * hidden + 2 * width)
    rotary = 2 * sizes["SEQ"] * (width // sizes["HEADS"] // 2) * 4        # cos and sin: buffers, on every rank
    setup = {kind: sum(s["nbytes"] for s in document["storages"] if s["kind"] == kind and s["setup"])
             for kind in ("param", "optimizer")}
    assert setup["param"] - rotary == pytest.approx(parameters * 4 / 8, abs=8 * 4 * 16)    # FSDP2 pads shards
    assert setup["optimizer"] - (setup["param"] - rotary) * 2 in range(0, 4 * 64)      # exp_avg, exp_avg_sq, steps
    gathered = {t["dtype"] for t in document["tensors"] if t["kind"] == "unsharded_param"}
    assert gathered == {"bfloat16"}
    collectives = [(e["op"], e["phase"]) for e in document["tape"] if e["family"] == "collective"
                   and e["collective"]["event"] != "waited"]
    assert collectives.count(("all_gather", "forward")) == sizes["LAYERS"] + 1
    assert collectives.count(("reduce_scatter", "backward")) == sizes["LAYERS"] + 1
    assert document["source"]["fake"] == {"world_size": 8} and document["world_size"] == 8
    assert document["summary"]["peak"]["verdict"].count("Rank 0") == 1


def test_the_peak_on_fake_ranks_is_fsdp_mem_trackers(tmp_path, monkeypatch):
    """torch's FSDPMemTracker on the same fake step of the Llama example at a small size (2 layers, 256 tokens):
    the same peak, to the byte."""
    for name, value in {"LAYERS": 2, "SEQ": 256, "WIDTH": 512, "HIDDEN": 1376, "VOCAB": 2000}.items():
        monkeypatch.setenv(f"TAPESCOPE_LLAMA_{name}", str(value))
    out = tmp_path / "run.json"
    assert main([str(LLAMA), "--fake", "--world-size", "8", "--warmup", "1", "--out", str(out)]) == 0
    ours = unpack(json.loads(out.read_text()))["summary"]["peak_bytes"]
    assert ours == tracker_peak(LLAMA, 8, warmup=1)


@pytest.mark.parametrize("flags, said", [
    (["--world-size", "4"], "--world-size is the fake process group's size: give --fake too"),
    (["--fake", "--values"], "--fake does not combine with --values"),
    (["--fake", "--nproc", "2"], "--fake does not combine with --nproc"),
    (["--fake", "--world-size", "0"], "--world-size 0: give a number of fake ranks from 1 to 4096"),
    (["--rank", "1"], "--rank picks the rank of a fake world to record: give --fake --world-size W too"),
    (["--fake", "--world-size", "2", "--rank", "2"], "--rank 2: give the rank to record, from 0 to 1"),
])
def test_flags_a_fake_step_cannot_take_are_one_sentence_before_the_file_runs(tmp_path, flags, said):
    model_file = tmp_path / "never_run.py"
    model_file.write_text("raise SystemExit('the file ran')\n")
    with pytest.raises(SystemExit, match="^" + re.escape(said)):
        main([str(model_file), *flags])



def _real_ddp_rank():
    model, batch, loss_fn, optimizer = distributed_model.build("ddp")
    return record_rank(model, batch, loss_fn, optimizer, warmup=1)


def test_ddp_on_fake_ranks_keeps_the_bytes_of_its_real_ranks_over_gloo():
    """DDP on fake ranks (torch_fake._ddp_on_fake_ranks: no shape check, the default hook's bucket as its future's
    value, the first bucket assignment kept): the saved bytes, the resident state and the bytes of every kind of
    storage rank 0 of a real 2-rank gloo run holds, the loss's aside (CPU's mse_loss, above); the same collectives,
    as many, but for the two broadcasts real ranks make when they rebuild their buckets after the first step. The
    buckets are DDP's rebuilt ones in bytes; a small parameter may sit in the next bucket (the order differs)."""
    real = run_ranks(_real_ddp_rank, 2)[0]
    with faking(2):
        fake = record_rank(*distributed_model.build("ddp"), warmup=1)
    assert fake["summary"]["saved_bytes"] == real["summary"]["saved_bytes"]
    kinds = {name: Counter() for name in ("real", "fake")}
    for name, document in (("real", real), ("fake", fake)):
        for storage in document["storages"]:
            kinds[name][storage["kind"]] += storage["nbytes"]
    cut = {name: Counter((s["nbytes"], s["kind"]) for s in document["storages"])
           for name, document in (("real", real), ("fake", fake))}
    loss_bytes = distributed_model.BATCH // 2 * distributed_model.SEQ * 4
    real_only, fake_only = cut["real"] - cut["fake"], cut["fake"] - cut["real"]
    assert real_only.pop((loss_bytes, "activation")) == 1 and fake_only.pop((4, "activation")) == 1
    # the rebuild's broadcasts of bucket indices and sizes: small int tensors only real ranks make
    rebuild = {key: n for key, n in real_only.items() if key[1] == "activation"}
    assert rebuild and all(nbytes <= 128 for nbytes, _ in rebuild)
    kinds["real"]["activation"] -= loss_bytes - 4 + sum(nbytes * n for (nbytes, _), n in rebuild.items())
    assert kinds["fake"] == kinds["real"]
    # and the gradients cut into other buckets: the same bytes, other sizes
    assert {kind for _, kind in fake_only} <= {"grad"} and {kind for _, kind in real_only} <= {"grad", "activation"}
    collectives = {name: Counter(e["op"] for e in document["tape"] if e["family"] == "collective")
                   for name, document in (("real", real), ("fake", fake))}
    assert collectives["real"].pop("broadcast") == 2         # the rebuild's agreement on the buckets
    assert collectives["fake"] == collectives["real"] and collectives["real"]["all_reduce"] > 2
    assert fake["summary"]["resident"] == real["summary"]["resident"]
