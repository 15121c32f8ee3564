"""The command line that records one real PyTorch training step into a trace document (torch_step.py records it).

    python -m backend.importers.torch MODEL_FILE [--out run.json] [--share URL] [--checkpoint POLICY] [--values]
                                                 [--warmup N] [--nproc N] [--allocator cuda|cuda-expandable]
                                                 [--fake [--world-size W [--rank R]]]

MODEL_FILE is your own Python file. It defines `build()`, which returns either a tuple
(model, batch[, loss_fn[, optimizer]]) or a dict with those keys ("model", "batch", optional "loss_fn",
"optimizer"). `model` is a torch.nn.Module. How one step runs (docs/torch-import.md has the details):

- with a loss_fn, `batch` is (inputs, target): output = model(inputs), loss = loss_fn(output, target);
- without one, output = model(batch) and the loss is the output itself when it is a scalar tensor, else
  output["loss"], output.loss or output[0];
- `inputs` / `batch` that is a tuple or list is spread as model(*batch), a dict as model(**batch);
- then loss.backward(), and optimizer.step() when an optimizer is given.

With --fake, build() and the step run under torch's FakeTensorMode (backend/importers/torch_fake.py): shapes, dtypes,
bytes and lifetimes at the model's real size, no values and no memory, so a model too big for this machine records
in seconds; --world-size W puts it on torch's fake process group of W ranks (build() wraps it as for real ranks:
fully_shard, parallelize_module, a pipeline's stage), the document being rank 0's, or --rank R's (ranks that
differ, as a pipeline's stages, are recorded one command each).

`build()` may be called more than once (each checkpoint what-if runs a fresh step), so seed it. The file runs
only here, on your machine, in this process; the app never imports torch and never runs Python it was sent.
"""
import argparse
import sys

from backend.importers import torch_checkpoint, torch_distributed
from backend.importers.share import ShareFailed, share
from backend.importers.mistakes import ImportMistake
from backend.importers.torch_checkpoint import schedule_label
from backend.importers.torch_fake import fake_world_problem, faking
from backend.importers.torch_step import document_text, load_build, record_step, step_of, write_run
from backend.models.caps import cap
from backend.trace.cuda_allocator import attach_reserved


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m backend.importers.torch",
                                     description="Record one training step of your PyTorch model as a Tapescope trace.")
    parser.add_argument("model_file", help="a Python file defining build() -> (model, batch[, loss_fn[, optimizer]])")
    parser.add_argument("--out", help="write the document here (default: standard output)")
    parser.add_argument("--share", metavar="URL", help="post the document to a Tapescope server (e.g. "
                                                       "http://127.0.0.1:5000) and print its /s/<id> link")
    parser.add_argument("--checkpoint", help="also run checkpointed what-ifs, attached as schedules: every_k=1, "
                                             "every_k=N or selective (several: comma-separated)")
    parser.add_argument("--blocks", help="comma-separated module paths to checkpoint (default: the longest run "
                                         "of same-class children of a ModuleList or Sequential)")
    parser.add_argument("--values", action="store_true",
                        help="include small tensors' values (default: statistics only; no raw weights leave)")
    parser.add_argument("--warmup", type=int, default=0, metavar="N",
                        help="run N plain steps before the recorded one (the steady state: the optimizer's state "
                             "allocated, as in the step that runs out of memory)")
    parser.add_argument("--nproc", type=int, default=0, metavar="N",
                        help="record every rank of a distributed step: N local processes on 127.0.0.1 (gloo on CPU, "
                             "nccl with CUDA), build() run after the process group is up; under torchrun, its ranks")
    parser.add_argument("--allocator", choices=("cuda", "cuda-expandable"),
                        help="add what PyTorch's CUDA caching allocator would reserve at every step (reserved_bytes; "
                             "its rules replayed on the recorded storages, docs/trace.md); cuda-expandable: with "
                             "expandable_segments:True")
    parser.add_argument("--fake", action="store_true",
                        help="record under FakeTensorMode: shapes, bytes and lifetimes at real size, no values and "
                             "no memory (a model bigger than this machine)")
    parser.add_argument("--world-size", type=int, default=1, metavar="W",
                        help="with --fake: torch's fake process group of W ranks, build() run after it is up; the "
                             "document is one rank's (--rank)")
    parser.add_argument("--rank", type=int, default=None, metavar="R",
                        help="with --fake --world-size W: record rank R of the fake world (default 0); where ranks "
                             "differ (a pipeline's stages), record each with its own command")
    args = parser.parse_args(argv)
    refused = fake_flags_problem(args)
    if refused:
        raise SystemExit(refused)
    if not 0 <= args.warmup <= cap("warmup_steps"):
        raise SystemExit(f"--warmup {args.warmup}: give a whole number of steps from 0 to {cap('warmup_steps')} "
                         "(each is a full training step of your model)")
    if args.blocks and not args.checkpoint:     # refused before the user's file runs, not after a recording
        raise SystemExit("--blocks names the modules a checkpoint what-if wraps: give --checkpoint too, "
                         "e.g. --checkpoint every_k=1 --blocks transformer.h.0,transformer.h.1")
    if args.allocator and (args.nproc or torch_distributed.under_torchrun()):
        raise SystemExit("--allocator replays one rank's document: record without --nproc (a run of many ranks "
                         "is not simulated yet)")
    if args.nproc or torch_distributed.under_torchrun():      # every rank: one run.json of all ranks' documents
        try:
            return torch_distributed.main(args)
        except ImportMistake as error:
            raise SystemExit(str(error)) from None
    try:
        document = fake_recorded(args) if args.fake else recorded(args)
    except ImportMistake as error:         # the user's to change: one sentence, no traceback
        raise SystemExit(str(error)) from None
    if args.allocator:
        attach_reserved(document, expandable_segments=args.allocator == "cuda-expandable")
    if args.out:
        write_run(document, args.out)
    elif not args.share:
        sys.stdout.write(document_text(document) + "\n")
    summary = document["summary"]
    print(f"{document['source']['model']}: {summary['entries']} ops, {summary['steps']} steps, "
          f"peak {summary['peak_bytes']:,} B at step {summary['peak_step']} ({summary['peak']['phase']}), "
          f"saved {summary['saved_bytes']:,} B" + (f" -> {args.out}" if args.out else ""), file=sys.stderr)
    if args.allocator:
        print(f"  {args.allocator} allocator: reserved peak {summary['reserved_peak_bytes']:,} B at step "
              f"{summary['reserved_peak_step']}", file=sys.stderr)
    if args.share:
        try:
            print(share(document, args.share))
        except ShareFailed as error:
            print(f"--share {args.share}: {error}", file=sys.stderr)
            return 1
    return 0


def recorded(args):
    """The document the flags ask for: the plain step, or it with its checkpoint what-ifs (each line printed)."""
    requests = torch_checkpoint.parse_policies(args.checkpoint) if args.checkpoint else None
    build = load_build(args.model_file)     # after the flags are checked: a bad flag is said before the file runs
    if not requests:
        return record_step(*step_of(build), values=args.values, warmup=args.warmup)
    document = torch_checkpoint.what_ifs(build, requests, args.blocks, values=args.values, warmup=args.warmup).document
    if "use_cache" in document["source"].get("changed", {}):
        print(f"  {torch_checkpoint.USE_CACHE_OFF}", file=sys.stderr)
    for schedule in document["schedules"]:
        print(what_if_line(schedule), file=sys.stderr)
    return document


def fake_flags_problem(args):
    """The sentence for a flag --fake does not combine with (or --world-size without --fake), else None."""
    if not args.fake:
        if args.rank is not None:
            return "--rank picks the rank of a fake world to record: give --fake --world-size W too"
        return ("--world-size is the fake process group's size: give --fake too (real ranks: --nproc N)"
                if args.world_size != 1 else None)
    for flag, given in (("--nproc", args.nproc), ("--checkpoint", args.checkpoint), ("--values", args.values)):
        if given:
            why = "a fake step has no values" if flag == "--values" else "it records one fake process"
            return f"--fake does not combine with {flag}: {why}"
    return fake_world_problem(args.world_size, args.rank or 0)


def fake_recorded(args):
    """--fake: build() and the step under FakeTensorMode, on a fake process group of --world-size ranks when
    that is more than 1 (then the document is --rank's, 0 by default, with its collectives, as a real rank's)."""
    build = load_build(args.model_file)
    with faking(args.world_size, rank=args.rank or 0):
        step = step_of(build)
        if args.world_size > 1:
            document = torch_distributed.record_rank(*step, warmup=args.warmup)
        else:
            document = record_step(*step, warmup=args.warmup, workspace=False)   # no allocator to profile
    document["source"]["fake"] = {"world_size": args.world_size}
    return document


def what_if_line(schedule):
    """One schedule's recorded, measured and predicted peaks, for the terminal: "measured by torch" only on the
    figure torch.profiler measured (the recorded peak is our count of the run's storages and workspace)."""
    measured = schedule.get("measured_peak_bytes")
    by_torch = f" ({measured:,} B measured by torch.profiler)" if measured is not None else ""
    return (f"  {schedule_label(schedule):14} peak {schedule['recorded_peak_bytes']:,} B recorded{by_torch}; "
            f"without workspace {schedule['executed_peak_bytes']:,} B, "
            f"{schedule['predicted_peak_bytes']:,} B predicted ({schedule['predicted_error']:+.2%}); "
            f"before the update {schedule['executed_backward_peak_bytes']:,} B vs "
            f"{schedule['predicted_backward_peak_bytes']:,} B; grads {'equal' if schedule['grads_match'] else 'differ'}")


if __name__ == "__main__":
    sys.exit(main())
