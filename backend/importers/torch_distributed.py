"""Every rank of a distributed training step, recorded: `--nproc N` runs N processes on 127.0.0.1 (gloo on CPU, nccl
where CUDA is), `torchrun --nproc-per-node N -m backend.importers.torch ...` uses the environment torchrun sets.

The process group is up before the user's build() runs, so build() wraps the model as a training script does (DDP,
fully_shard, parallelize_module); each rank records its own step (torch_collectives.RankRecorder: the same document
as one process, over the tensors this rank holds, with its collectives on the tape); rank 0 gathers the documents
(dist.gather_object) and one run.json is written:

    {"world_size": N, "ranks": [document of rank 0, document of rank 1, ...]}

each a full trace document (schema_version 2, as run.json always is) with its `rank`, `world_size` and `mesh`
(the device mesh's shape, dim names and ranks when the model's parameters are DTensors on one, else null).
"""
import gc
import json
import multiprocessing
import os
import pickle
import socket
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch.multiprocessing.spawn import ProcessException

from backend.importers.mistakes import ImportMistake
from backend.importers.torch_collectives import RankRecorder, local
from backend.importers.torch_waits import watching_distributed
from backend.importers.torch_storages import storage_address
from backend.importers.torch_step import document_of, load_build, record, step_of, warm_up
from backend.models.caps import cap
from backend.trace.document_versions import pack
from backend.trace.memory import alive_at
from backend.trace.peak import explain_peak, format_bytes

TIMEOUT = timedelta(minutes=5)      # a rank that died must not keep the others waiting for gloo's 30 minutes


# ----- one rank ------------------------------------------------------------------------------------
def record_rank(model, batch, loss_fn=None, optimizer=None, values=False, warmup=0):
    """This rank's step of an already wrapped model, recorded: its trace document with rank, world_size and mesh."""
    warm_up(model, batch, loss_fn, optimizer, warmup)
    recorder = RankRecorder(with_values=values, model=model)
    with watching_distributed(recorder):
        recorder, loss = record(model, batch, loss_fn, optimizer, values=values, recorder=recorder)
    recorder.sharding_kinds()
    document = document_of(recorder, loss, model, batch, loss_fn, optimizer)
    document["source"]["warmup_steps"] = warmup
    document["rank"], document["world_size"] = dist.get_rank(), dist.get_world_size()
    document["mesh"] = mesh_of(model)
    document["summary"]["peak"] = explain_peak(document)       # again, now that it is a rank's: in sharding's words
    document["ddp_buckets"] = recorder.ddp_buckets
    document["summary"]["collectives"] = collective_summary(document["tape"])
    document["summary"]["by_shard_role_at_peak"] = by_role_at(document, document["summary"]["peak_step"])
    document["summary"]["peak_sharding"] = peak_sharding(document)
    return document


ROLE_WORDS = {      # torch_collectives.ROLES, as the peak's sentence says them
    "unsharded_param": "all-gathered (unsharded) parameters", "sharded_param": "its parameter shards",
    "unsharded_grad": "unsharded gradients waiting for their reduce-scatter", "grad_shard": "its gradient shards",
    "comm_buffer": "communication buffers", "bucket": "DDP's gradient buckets",
}


def peak_sharding(document):
    """The rank's peak in the words of its sharding: where it is and what the sharded step holds there, largest
    first (e.g. "rank 1 peaks in backward at step 373 (transformer.h.3.mlp.c_proj): all-gathered (unsharded)
    parameters 3.2 MiB, its parameter shards 6.1 MiB ... of 47.2 MiB")."""
    summary = document["summary"]
    step = document["steps"][summary["peak_step"]]
    scope = document["tape"][step["entry"]]["scope"] if step.get("entry") is not None else None
    held = sorted(summary["by_shard_role_at_peak"].items(), key=lambda item: -item[1])
    parts = ", ".join(f"{ROLE_WORDS.get(role, role)} {_mib(nbytes)}" for role, nbytes in held if nbytes)
    where = f"{step['phase']} at step {step['index']}" + (f" ({scope})" if scope else "")
    if step.get("micro_batch") is not None:
        flight = in_flight(document["steps"], step["index"])
        where = (f"micro-batch {step['micro_batch']}'s {where}, with micro-batch{'es' if len(flight) > 1 else ''} "
                 f"{_and(flight)} in flight (forward run, backward not finished)")
    sentence = (f"rank {document['rank']} peaks in {where}: " + (f"{parts} of {_mib(summary['peak_bytes'])}" if parts
                else f"{_mib(summary['peak_bytes'])}, none of it sharding's"))
    freed, units = reshard_would_free(document)
    if freed:
        sentence += (f"; resharding after forward (reshard_after_forward=True) would free {format_bytes(freed)} of "
                     f"them here, {_and(units)}'s (forward done, backward not begun)")
    return sentence


def reshard_would_free(document, at=None):
    """(bytes, units) of the all-gathered parameters alive at step `at` (the peak's) that resharding after forward
    frees there:
    those of each FSDP2 unit whose forward ended before the peak step and whose backward has not begun. Kept
    (reshard_after_forward=False), they wait for backward; resharded, they are gathered again when it begins. A run
    that reshards holds none such."""
    at = document["summary"]["peak_step"] if at is None else at
    steps, tape = document["steps"], document["tape"]
    scopes = [(step["phase"], tape[step["entry"]]["scope"]) if step.get("entry") is not None else (step["phase"], "")
              for step in steps]

    def within(scope, unit):
        return unit == "model" or scope == unit or scope.startswith(unit + ".")

    freed = {}
    for storage in alive_at(at, document["storages"]):
        unit = storage.get("scope")
        if storage.get("shard_role") != "unsharded_param" or unit is None:
            continue
        forward = [i for i, (phase, scope) in enumerate(scopes) if phase == "forward" and within(scope, unit)]
        backward = [i for i, (phase, scope) in enumerate(scopes) if phase == "backward" and within(scope, unit)]
        if forward and forward[-1] < at and not (backward and backward[0] <= at):
            freed[unit] = freed.get(unit, 0) + storage["nbytes"]
    return sum(freed.values()), sorted(freed)


def in_flight(steps, at):
    """The micro-batches of a pipeline stage in flight at step `at`: their forward has begun and their backward has
    not ended (what the stage holds their saved activations for), in order."""
    first, last = {}, {}
    for step in steps:
        micro_batch = step.get("micro_batch")
        if micro_batch is None:
            continue
        if step["phase"] == "forward":
            first.setdefault(micro_batch, step["index"])
        elif step["phase"] == "backward":
            last[micro_batch] = step["index"]
    return [m for m in sorted(first) if first[m] <= at <= last.get(m, len(steps))]


def _and(numbers):
    words = [str(n) for n in numbers]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + f" and {words[-1]}"


def _mib(nbytes):
    return f"{nbytes / 2 ** 20:.1f} MiB"


def mesh_of(model):
    """The device mesh the model's DTensor parameters live on: shape, dim names and the ranks it lays out."""
    for parameter in model.parameters():
        mesh = getattr(parameter, "device_mesh", None)
        if mesh is not None:
            names = mesh.mesh_dim_names
            with unset_fake_temporarily():      # a mesh is real even when the step is fake (torch_fake)
                ranks = mesh.mesh.tolist()
            return {"shape": list(mesh.shape), "dim_names": list(names) if names else None,
                    "ranks": ranks, "device_type": mesh.device_type}
    return None


def collective_summary(tape):
    """Per collective op: how many were issued and the bytes they sent and received on this rank."""
    summary = {}
    for entry in tape:
        collective = entry.get("collective")
        if entry["family"] != "collective" or collective["event"] == "waited":
            continue
        row = summary.setdefault(collective["op"], {"count": 0, "bytes_in": 0, "bytes_out": 0})
        row["count"] += 1
        row["bytes_in"] += collective["bytes_in"]
        row["bytes_out"] += collective["bytes_out"]
    return summary


def by_role_at(document, step):
    """Live bytes at `step` per shard_role (storages tagged by the recorder; untagged ones are not counted), alive
    as the document's live bytes count them (backend/trace/memory.py)."""
    roles = {}
    for storage in alive_at(step, document["storages"]):
        role = storage.get("shard_role")
        if role:
            roles[role] = roles.get(role, 0) + storage["nbytes"]
    return roles


def local_parameter_bytes(model):
    """The bytes of the parameters this rank holds (a DTensor's local shard; each storage once)."""
    storages = {}
    for parameter in model.parameters():
        storage = local(parameter).untyped_storage()
        storages[storage_address(storage)] = storage.nbytes()
    return sum(storages.values())


# ----- process groups ------------------------------------------------------------------------------
def under_torchrun():
    return all(name in os.environ for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


def init_group():
    """Join the process group the environment describes (torchrun's, or ours): nccl with CUDA, else gloo."""
    if dist.is_initialized():
        return
    if torch.cuda.is_available():
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
        dist.init_process_group("nccl", timeout=TIMEOUT)
    else:
        dist.init_process_group("gloo", timeout=TIMEOUT)


def leave_group():
    """Destroy the process group once nothing holds it. A DistributedDataParallel model sits in a reference cycle
    (its hooks refer back to it), so it, its Reducer and through them the gloo group outlive destroy_process_group
    until a collection; left to the interpreter's exit, gloo's threads are torn down during finalization, where a
    thread that takes the GIL is ended by pthread_exit and the rank dies of SIGABRT ("terminate called without an
    active exception") after its work is done. Collected here, the group goes while the interpreter is whole."""
    gc.collect()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_ranks(target, nproc, *args, fresh=False):
    """Run target(*args) on `nproc` local ranks (127.0.0.1, a free port), each with the process group up; returns
    every rank's result, in rank order (gathered to rank 0, handed back through a file). A rank's ImportMistake is
    raised here as the same sentence. On CPU the ranks are forked from this process, and a forked rank inherits what
    this process's torch holds; `fresh` ranks are forked from a process that has run nothing but its imports (torch
    and this module: multiprocessing's forkserver, started at the first fresh run and kept), so they start as a new
    command's would without importing torch again. With CUDA the ranks are always spawned: nothing of CUDA may be
    forked."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="tapescope-ranks-") as scratch:
        result_path = Path(scratch) / "ranks.pickle"
        method = "spawn" if torch.cuda.is_available() else "forkserver" if fresh else "fork"
        if method == "forkserver":
            multiprocessing.get_context(method).set_forkserver_preload([__name__])
        try:
            torch.multiprocessing.start_processes(_rank_entry, args=(nproc, port, str(result_path), target, args),
                                                  nprocs=nproc, start_method=method, join=True)
        except ProcessException:
            # the first rank to stop says why; the others stop with it (their peer gone), in any order
            mistakes = sorted(Path(scratch).glob("mistake*.txt"))
            if mistakes:
                raise ImportMistake(mistakes[0].read_text()) from None
            raise
        return pickle.loads(result_path.read_bytes())


def _rank_entry(rank, nproc, port, result_path, target, args):
    # A forked rank holds every object of the process it was forked from: frozen, the collector never walks them
    # (leave_group's collection, or one the rank's allocations trigger), so it neither pays for a pass over them nor
    # writes to each one's page, which would copy the whole heap out from under the fork.
    gc.freeze()
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), LOCAL_RANK=str(rank),
                      WORLD_SIZE=str(nproc), LOCAL_WORLD_SIZE=str(nproc))
    try:
        init_group()
        gathered = gather(target(*args))
    except (ImportMistake, SystemExit) as mistake:      # the user's to change (load_build's and step_of's too)
        Path(result_path).with_name(f"mistake{rank}.txt").write_text(f"rank {rank}: {mistake}")
        sys.exit(1)
    if rank == 0:
        Path(result_path).write_bytes(pickle.dumps(gathered))
    leave_group()


def gather(value):
    """Every rank's `value` on rank 0 (a list in rank order), None elsewhere."""
    gathered = [None] * dist.get_world_size() if dist.get_rank() == 0 else None
    dist.gather_object(value, gathered, dst=0)
    return gathered


# ----- the command line's part -------------------------------------------------------------------
def run_document(documents):
    """run.json's object: the world size and every rank's document, each packed as schema_version 2."""
    return {"world_size": len(documents), "ranks": [pack(document) for document in documents]}


def write_ranks(documents, path):
    Path(path).write_text(json.dumps(run_document(documents), separators=(",", ":")))


def record_file(model_file, values=False, warmup=0):
    """One rank's document of MODEL_FILE's step: build() runs here, after the process group is up."""
    build = load_build(model_file)
    return record_rank(*step_of(build), values=values, warmup=warmup)


def main(args):
    """`--nproc N` or torchrun: every rank recorded, one run.json from rank 0; 0 on success."""
    if args.checkpoint or args.share:
        raise SystemExit(f"{'--checkpoint' if args.checkpoint else '--share'} records one process: it does not yet "
                         "combine with --nproc or torchrun; record the ranks into --out run.json and open it")
    if under_torchrun():
        init_group()
        documents = gather(record_file(args.model_file, args.values, args.warmup))
        rank = dist.get_rank()
        leave_group()
        if rank != 0:
            return 0
    else:
        if not 1 <= args.nproc <= cap("ranks"):
            raise SystemExit(f"--nproc {args.nproc}: give a number of local ranks from 1 to {cap('ranks')}")
        if not Path(args.model_file).is_file():
            raise SystemExit(f"{args.model_file}: no such file")
        documents = run_ranks(record_file, args.nproc, args.model_file, args.values, args.warmup)
    if args.out:
        write_ranks(documents, args.out)
    else:
        sys.stdout.write(json.dumps(run_document(documents), separators=(",", ":")) + "\n")
    for document in documents:
        print(rank_line(document) + (f" -> {args.out}" if args.out else ""), file=sys.stderr)
    return 0


def rank_line(document):
    summary = document["summary"]
    moved = ", ".join(f"{row['count']} {op} ({row['bytes_out']:,} B)" for op, row in summary["collectives"].items())
    return (f"rank {document['rank']}/{document['world_size']} {document['source']['model']}: {summary['entries']} "
            f"entries, peak {summary['peak_bytes']:,} B at step {summary['peak_step']} ({summary['peak']['phase']}), "
            f"saved {summary['saved_bytes']:,} B; collectives: {moved or 'none'}")
