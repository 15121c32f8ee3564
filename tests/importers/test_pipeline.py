"""A pipeline-parallel step recorded on 2 gloo ranks over loopback: examples/torch/gpt_pipeline.py, the small GPT in
two stages under torch's Schedule1F1B with 4 micro-batches. Per rank, against what torch itself shows: the order of
the micro-batches' forwards and backwards is the schedule's own (`pipeline_order`), the saved bytes are the most that
saved_tensors_hooks' packs held at once (stage 0 holds two micro-batches in flight, stage 1 one), the activations and
gradients sent and received are the stage's, the peak is torch.profiler's, and the gradients are the whole model's in
one process. Each stage recorded again on torch's fake process group (`--fake --world-size 2 --rank R`) holds what the
real rank held, and the ledger's pp=2 rows are checked against both."""
import contextlib
import importlib.util
import itertools
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")
dist = pytest.importorskip("torch.distributed", reason="this torch build has no torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed's gloo backend is not available in this torch build", allow_module_level=True)
pytestmark = pytest.mark.xdist_group("torch-import")

from torch import nn  # noqa: E402

from backend.importers.torch_distributed import in_flight, record_rank, run_ranks  # noqa: E402
from backend.importers.torch_profile import existing_bytes, plain_peak, profiled  # noqa: E402
from backend.importers.torch_step import run_step, step_of, unpack_build, warm_up  # noqa: E402
from tests.importers.packed import held_at_once  # noqa: E402

EXAMPLE = Path(__file__).parents[2] / "examples" / "torch" / "gpt_pipeline.py"
WORLD, WARMUP, PROFILED_STEPS = 2, 1, 3
ACTIVATION_BYTES = 2 * 64 * 256 * 4         # one micro-batch's (2 sequences × 64 tokens × width 256) float32


def example():
    spec = importlib.util.spec_from_file_location("tapescope_test_gpt_pipeline", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def chunks_called(stage):
    """The (phase, micro-batch) of each forward_one_chunk and backward_one_chunk the schedule calls, in order
    (torch's own `pipeline_order` is a drawing of the schedule, not what runs: on the last stage of Schedule1F1B it
    numbers the forwards from 1 to 4 and the backwards from 0 to 3)."""
    calls = []
    for phase in ("forward", "backward"):
        run = getattr(stage, f"{phase}_one_chunk")
        setattr(stage, f"{phase}_one_chunk", lambda chunk, *a, _run=run, _phase=phase, **k:
                (calls.append((_phase, chunk + 1)), _run(chunk, *a, **k))[1])
    try:
        yield calls
    finally:
        del stage.forward_one_chunk, stage.backward_one_chunk


def receive_buffer_bytes(stage):
    """What the stage's receive buffers hold before the step, as torch keeps them (one per micro-batch each way)."""
    infos = [*stage.args_recv_info.values(), *stage.grad_recv_info.values()]
    buffers = [info.buffer for received in infos for info in received if getattr(info, "buffer", None) is not None]
    return sum(buffer.untyped_storage().nbytes() for buffer in buffers)


def without_dropout(module):
    for child in module.modules():
        if isinstance(child, nn.Dropout):
            child.p = 0.0
        if hasattr(child, "dropout") and isinstance(child.dropout, float):
            child.dropout = 0.0
    return module


def on_each_rank():
    build = example().build
    model, batch, schedule, optimizer = step_of(build)
    document = record_rank(model, batch, schedule, optimizer, warmup=WARMUP)

    model, batch, schedule, optimizer = step_of(build)       # the same step, plain, under torch's own instruments
    warm_up(model, batch, schedule, optimizer, WARMUP)
    with chunks_called(schedule._stage) as order:
        held, _ = held_at_once(lambda: run_step(model, batch, schedule, optimizer))
    existing = existing_bytes(model, batch, optimizer) + receive_buffer_bytes(schedule._stage)
    peaks = []
    for _ in range(PROFILED_STEPS):
        optimizer.zero_grad(set_to_none=True)
        _, events = profiled(lambda: run_step(model, batch, schedule, optimizer))
        peaks.append(plain_peak(events, existing))

    model, batch, schedule, _ = unpack_build(build())         # one step without dropout: the gradients
    without_dropout(model)
    run_step(model, batch, schedule)
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters()}
    return {"document": document, "order": order, "held": held, "profiled_peak": min(peaks), "grads": grads}


@pytest.fixture(scope="module")
def ranks():
    return run_ranks(on_each_rank, WORLD)


def runs(document):
    """The document's steps as runs of (phase, micro-batch), the optimizer's and the split of the batch left out."""
    keys = [(s["phase"], s.get("micro_batch")) for s in document["steps"] if s.get("micro_batch") is not None]
    return [key for key, _ in itertools.groupby(keys)]


def test_each_micro_batchs_forward_and_backward_run_in_the_schedules_order(ranks):
    expected = {0: [("forward", 1), ("forward", 2), ("backward", 1), ("forward", 3), ("backward", 2), ("forward", 4),
                    ("backward", 3), ("backward", 4)],
                1: [("forward", 1), ("backward", 1), ("forward", 2), ("backward", 2), ("forward", 3), ("backward", 3),
                    ("forward", 4), ("backward", 4)]}
    for rank, results in enumerate(ranks):
        document = results["document"]
        assert runs(document) == results["order"] == expected[rank]
        assert document["summary"]["micro_batches"] == 4
        assert document["source"]["pipeline"] == {"schedule": "Schedule1F1B", "stage": rank, "stages": 2,
                                                  "micro_batches": 4}
        forward_entries = [e for e in document["tape"] if e["phase"] == "forward" and e["family"] != "collective"]
        assert {e.get("micro_batch") for e in forward_entries} >= {1, 2, 3, 4}


def test_the_first_stage_holds_two_micro_batches_in_flight_and_the_last_one(ranks):
    for rank, results in enumerate(ranks):
        document = results["document"]
        most = max(len(in_flight(document["steps"], s["index"])) for s in document["steps"])
        assert most == WORLD - rank
        assert "in flight" in document["summary"]["peak_sharding"]


def test_saved_bytes_are_the_most_saved_tensors_hooks_held_at_once(ranks):
    for results in ranks:
        assert results["document"]["summary"]["saved_bytes"] == results["held"]
    # two micro-batches' saves against one: the first stage's blocks save more than the last's (which also saves
    # the head's input and the logits' softmax), by about one micro-batch of its blocks' activations
    assert ranks[0]["held"] > ranks[1]["held"]


def test_activations_go_forward_and_gradients_back_as_sends_and_receives(ranks):
    for rank, results in enumerate(ranks):
        tape = results["document"]["tape"]
        moved = [(e["collective"]["op"], e["collective"]["bytes_out"]) for e in tape if e["family"] == "collective"]
        assert sorted(moved) == [("recv", ACTIVATION_BYTES)] * 4 + [("send", ACTIVATION_BYTES)] * 4
        for entry in (e for e in tape if e["family"] == "collective"):
            assert entry["collective"]["group"] == [0, 1]
        summary = results["document"]["summary"]["collectives"]
        assert summary["send"]["count"] == summary["recv"]["count"] == 4
    # stage 0 sends micro-batch 1's activations right after its forward, before anything of micro-batch 2
    tape = ranks[0]["document"]["tape"]
    first_send = next(e for e in tape if e["family"] == "collective" and e["collective"]["op"] == "send")
    assert first_send["micro_batch"] == 1 and first_send["phase"] == "forward"
    assert all(e.get("micro_batch") in (None, 1) for e in tape[:first_send["index"]])


def test_the_peak_is_torch_profilers_on_that_rank(ranks):
    for results in ranks:
        ours, measured = results["document"]["summary"]["peak_bytes"], results["profiled_peak"]
        assert 0.97 * ours <= measured <= 1.03 * ours, (ours, measured)


def test_gradients_equal_the_whole_model_in_one_process(ranks):
    gpt = example().gpt
    model, (inputs, target), loss_fn, _ = gpt.build()
    model.lm_head.weight = nn.Parameter(model.lm_head.weight.detach().clone())      # untied, as the stages are
    without_dropout(model)
    loss_fn(model(inputs), target).backward()
    reference = {name.removeprefix("transformer."): p.grad for name, p in model.named_parameters()}
    seen = set()
    for results in ranks:
        for name, grad in results["grads"].items():
            torch.testing.assert_close(grad, reference[name], rtol=1e-4, atol=1e-6, msg=name)
            seen.add(name)
    assert seen == set(reference)


def test_the_ledgers_pipeline_stages_are_the_recorded_ranks(ranks):
    """The ledger's per-GPU rows at pp=2 against each rank recorded on gloo (ledger_rows_against)."""
    for rank, results in enumerate(ranks):
        ledger_rows_against(results["document"], rank)


def ledger_rows_against(document, rank):
    """The ledger's per-GPU rows at pp=2, 4 micro-batches of 2 sequences, untied head (backend/ledger/parallel.py:
    stage s holds min(pp − s, m) micro-batches in flight) against one recorded rank, within 1%. What torch's
    pipelining holds beyond the ledger's Megatron-style count is named and added: a receive buffer for every
    micro-batch each way, kept from the schedule's first step on (the ledger: the in-flight micro-batches' received
    inputs among the activations, one boundary tensor each way among the communication buffers; a stage's gradient
    receive buffers are kind grad, its activation ones kind activation), and each in-flight micro-batch's stage
    output, kept for its backward (Megatron frees the output's data once it is sent)."""
    from backend.ledger import parse_config
    from backend.ledger.parallel import gpu_rows, peak_bytes, stages
    from tests.ledger.test_per_gpu import TORCH_GPT
    config = parse_config(dict(TORCH_GPT, batch=2, pp=2, micro_batches=4, tied_embeddings=False))
    summary, stage = document["summary"], stages(config)[rank]
    rows = {name: row["bytes"] for name, row in gpu_rows(config, stage).items()}
    receive = {kind: sum(s["nbytes"] for s in document["storages"] if s["setup"] and s["kind"] == kind
                         and s.get("shard_role") == "comm_buffer") for kind in ("activation", "grad")}
    assert receive == ({"activation": 0, "grad": 4 * ACTIVATION_BYTES} if rank == 0 else
                       {"activation": 4 * ACTIVATION_BYTES, "grad": 0})
    in_flight = int(stage.in_flight)
    received_beyond = receive["activation"] - in_flight * ACTIVATION_BYTES if receive["activation"] else 0
    outputs_kept = in_flight * ACTIVATION_BYTES if rank < WORLD - 1 else 0
    first_backward = next(s["index"] for s in document["steps"] if s["phase"] == "backward")
    held = document["steps"][first_backward - 1]["by_kind"]         # what the stage holds before it
    assert rows["parameters"] == summary["by_kind_at_end"]["param"]
    assert rows["gradients"] + receive["grad"] == pytest.approx(summary["resident"]["grads_bytes"], rel=0.01)
    assert rows["optimizer_state"] == pytest.approx(summary["resident"]["optimizer_state_bytes"], rel=0.01)
    assert rows["activations"] + outputs_kept + received_beyond == pytest.approx(
        held["activation"] + held["input"], rel=0.01)
    # the peak: the ledger's, its send and receive boundary tensors replaced by torch's buffers and kept outputs
    beyond = receive["grad"] + received_beyond + outputs_kept - rows["communication_buffers"]
    ledger_peak = peak_bytes(config, stage, gpu_rows(config, stage))
    assert ledger_peak + beyond == pytest.approx(summary["peak_bytes"], rel=0.06)


@pytest.fixture(scope="module")
def fake_ranks(ranks):
    """Each stage recorded on torch's fake process group of 2 (`--fake --world-size 2 --rank R`), in this process,
    after the real ranks were forked from it (`ranks` first: nothing fake is inherited by a real rank)."""
    from backend.importers.torch_fake import faking
    build = example().build
    documents = []
    for rank in range(WORLD):
        with faking(WORLD, rank=rank):
            documents.append(record_rank(*step_of(build), warmup=WARMUP))
    return documents


def test_each_stage_recorded_fake_holds_what_the_real_rank_held_and_the_ledger_counts(ranks, fake_ranks):
    """--fake --world-size 2 --rank R on gpt_pipeline.py against the gloo rank R recorded above: the same saved bytes,
    parameters, gradients, optimizer state and peak, byte for byte, but for one thing gloo holds that a fake group
    does not: on rank 0 the real peak is one activation (micro-batch 1's stage output, 131,072 B) higher. Gloo's
    send Work keeps the tensor it sends (ProcessGroupGloo.hpp, SendWork::tensor_), and Schedule1F1B keeps the
    warm-up's `send_work` (micro-batch 1's send) until it reassigns it after its 1B1F loop
    (torch/distributed/pipelining/schedules.py ~lines 1062 and 1147), so the output outlives its backward until
    micro-batch 3's; a fake Work holds nothing, and the fake stage frees it at micro-batch 1's backward. Then the
    ledger's rows against the fake stage as against the real one (ledger_rows_against, the same named extras)."""
    for rank, (real, fake) in enumerate(zip([results["document"] for results in ranks], fake_ranks)):
        assert fake["rank"] == rank and fake["source"]["pipeline"] == real["source"]["pipeline"]
        assert runs(fake) == runs(real)
        figures = {}
        for name, document in (("real", real), ("fake", fake)):
            summary = document["summary"]
            figures[name] = {"saved": summary["saved_bytes"], "parameters": summary["by_kind_at_end"]["param"],
                             "gradients": summary["resident"]["grads_bytes"],
                             "optimizer_state": summary["resident"]["optimizer_state_bytes"],
                             "peak": summary["peak_bytes"]}
        held_by_gloos_send = ACTIVATION_BYTES if rank == 0 else 0
        assert figures["real"] == dict(figures["fake"], peak=figures["fake"]["peak"] + held_by_gloos_send), rank
        ledger_rows_against(fake, rank)


def test_a_schedule_of_several_stages_per_rank_and_a_batch_without_a_target_are_one_sentence_each():
    from torch.distributed.pipelining import ScheduleGPipe, ScheduleInterleaved1F1B

    from backend.importers.mistakes import StepError
    from backend.importers.torch_pipeline import run_schedule
    interleaved = object.__new__(ScheduleInterleaved1F1B)       # what build() would hand over; never stepped
    with pytest.raises(StepError, match="ScheduleInterleaved1F1B runs several stages per rank.*Schedule1F1B or "
                                        "ScheduleGPipe"):
        run_schedule(interleaved, (torch.zeros(2), torch.zeros(2)))
    with pytest.raises(StepError, match=r"batch must be \(inputs, target\)"):
        run_schedule(object.__new__(ScheduleGPipe), torch.zeros(2))


def test_a_fake_stage_without_its_shapes_is_one_sentence():
    """Under --fake a PipelineStage must be given input_args and output_args (torch_fake._pipeline_votes_alone)."""
    from backend.importers.mistakes import StepError
    from backend.importers.torch_fake import faking
    module = example()
    module.example_tensors = lambda stage, stages: {}       # the stage left to infer its shapes, as a real run does
    with faking(WORLD, rank=1), pytest.raises(StepError, match="under --fake, PipelineStage 1 needs its shapes "
                                                                "given: pass input_args and output_args"):
        run_step(*step_of(module.build))


def test_the_run_is_what_docs_trace_run_schema_declares(ranks):
    """run.json of the two ranks (as the command line writes it) against docs/trace-run.schema.json, each rank's
    document through its $ref to docs/trace.schema.json; a run whose world size is not a number, or whose rank lacks its
    summary, is not."""
    import json

    import jsonschema
    from referencing import Registry, Resource

    from backend.importers.torch_distributed import run_document
    docs = Path(__file__).parents[2] / "docs"
    schemas = {name: json.loads((docs / name).read_text()) for name in ("trace-run.schema.json", "trace.schema.json")}
    registry = Registry().with_resources((schema["$id"], Resource.from_contents(schema)) for schema in schemas.values())
    validator = jsonschema.Draft202012Validator(schemas["trace-run.schema.json"], registry=registry)
    run = json.loads(json.dumps(run_document([results["document"] for results in ranks])))
    validator.validate(run)
    assert not validator.is_valid({**run, "world_size": "2"})
    del run["ranks"][1]["summary"]                          # read through the $ref: a rank's document is checked
    assert not validator.is_valid(run)
