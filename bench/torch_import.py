"""Recording overhead of the torch importer: the step under the hooks ÷ the plain step (the issue's overhead,
goal ≤ 3×), the document build on its own, the run.json's size, and what the server's check of a posted run.json
costs (load_posted_document) against parsing its JSON; then the checkpoint what-ifs: per schedule, torch's measured
peak (the checkpointed step, recorded) against our planner's prediction from the plain document alone (goal: within
2%), for the whole step and before the optimizer's update; then per rank of the distributed examples on 2 gloo ranks
(DDP, ZeRO-1, FSDP2 both ways), the recorded step (the recorder's hooks, collectives and the document) ÷ the plain
distributed step.

    .venv/bin/python bench/torch_import.py [--threads N] [--repeats N] [--cpu] [--no-ranks] [--overhead-only]

The overhead table covers examples/torch/'s models and the models the importer's tests build (TEST_MODELS, their
builders imported from tests/importers/, not copied): an LSTM, a conv net, a custom autograd.Function, a model that
checkpoints itself, a Sequential of residual blocks, T5 tiny (random config; left out without transformers).

Plain and recorded steps are measured alike: one untimed warm-up each, then per repeat a fresh build() (not
timed) for each, the two interleaved so a busy machine slows both; the medians are printed. `hooked ms` is
record(): the recorder's setup, the step under its hooks and their removal; `bare mode` is the same step under a
dispatch mode and saved-tensor hooks that record nothing (÷ plain: the floor); `profiler` is the same step under
torch's own C++ profiler recording input shapes and memory events, its results handed over (÷ plain: what a
recorder below Python dispatch, built on torch's instrument, pays before doing anything); `build ms` is document_of() on that
recorder (statistics of the copies the hooks took, live bytes, the peak explanation). torch runs on --threads
intra-op threads (default 1: the hooks' Python is single-threaded whatever the plain step uses, and on a shared
machine a multi-threaded plain step's time mostly measures the neighbours). `--cpu` times with the process's CPU
clock instead of the wall clock: on a busy machine the wall clock measures the neighbours too.
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch._C._profiler import ProfilerActivity, ProfilerConfig, ProfilerState, _ExperimentalConfig  # noqa: E402
from torch.autograd.profiler import _disable_profiler, _enable_profiler, _prepare_profiler  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from backend.importers.torch_dispatch import _set_eval_frame  # noqa: E402
from backend.importers.torch_distributed import record_rank, run_ranks  # noqa: E402
from backend.importers.torch_step import document_of, load_build, record, run_step, step_of, unpack_build, warm_up  # noqa: E402
from backend.importers.torch_checkpoint import parse_policies, schedule_label, what_ifs  # noqa: E402
from backend.trace.document_versions import pack  # noqa: E402
from backend.trace.intake import load_posted_document  # noqa: E402

EXAMPLES = ["mlp", "residual", "gpt", "transformer_tiny"]
# name -> (module under tests/importers, its builder, keyword arguments): the importer tests' own models
TEST_MODELS = {
    "lstm": ("test_torch_workspace", "lstm_step", {}),
    "conv": ("test_torch_flops", "conv_step", {}),
    "custom_function": ("test_torch_node_kinds", "swish_step", {}),
    "self_checkpointing": ("test_torch_self_checkpointing", "step", {"checkpointed": True}),
    "sequential_blocks": ("test_torch_blocks", "residual_stack", {}),
    "t5_tiny": ("test_torch_t5", "tiny_t5", {}),
}
WHAT_IF_EXAMPLES = ["gpt", "transformer_tiny"]
WHAT_IF_POLICIES = "every_k=1,every_k=2,selective"
RANK_EXAMPLES = ["gpt_ddp", "gpt_zero1", "gpt_fsdp", "gpt_fsdp_keep", "gpt_pipeline"]
RANKS = 2


class BareMode(TorchDispatchMode):
    """Every op through Python and back, nothing recorded: the floor any dispatch-mode recorder stands on."""

    @classmethod
    def _should_skip_dynamo(cls):
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        prior = _set_eval_frame(None)           # as the recorder does: no Dynamo in its frames, one switch each way
        try:
            return func(*args, **(kwargs or {}))
        finally:
            _set_eval_frame(prior)


def bare_step(model, batch, loss_fn, optimizer):
    with BareMode(), torch.autograd.graph.saved_tensors_hooks(lambda tensor: tensor, lambda tensor: tensor):
        run_step(model, batch, loss_fn, optimizer)


def profiled_step(model, batch, loss_fn, optimizer):
    """The step under torch's own C++ recorder, as a recorder below Python dispatch would use it: the profiler
    collecting every op's input shapes and the allocator's events, and its results handed over (_disable_profiler,
    no Python event objects made)."""
    config = ProfilerConfig(ProfilerState.KINETO, True, True, False, False, False, _ExperimentalConfig())
    _prepare_profiler(config, {ProfilerActivity.CPU})
    _enable_profiler(config, {ProfilerActivity.CPU})
    try:
        run_step(model, batch, loss_fn, optimizer)
    finally:
        _disable_profiler()


def step_times(build, repeats, clock):
    """Median seconds of (plain step, bare mode, profiler, step under the hooks, document build), and the last
    document."""
    plain, bare, profiled, hooked, built = [], [], [], [], []
    for repeat in range(repeats + 1):                    # repeat 0 warms up, untimed
        step = unpack_build(build())
        start = clock()
        run_step(*step)
        plain_s = clock() - start
        step = unpack_build(build())
        start = clock()
        bare_step(*step)
        bare_s = clock() - start
        step = unpack_build(build())
        start = clock()
        profiled_step(*step)
        profiled_s = clock() - start
        step = unpack_build(build())
        start = clock()
        recorder, loss = record(*step)
        hooked_s = clock() - start
        start = clock()
        document = document_of(recorder, loss, *step)
        built_s = clock() - start
        if repeat:
            for times, value in ((plain, plain_s), (bare, bare_s), (profiled, profiled_s), (hooked, hooked_s),
                                 (built, built_s)):
                times.append(value)
    return (*(statistics.median(times) for times in (plain, bare, profiled, hooked, built)), document)


def check_times(text, repeats, clock):
    """Median seconds to parse the run.json, and to parse it and check it as POST /api/traces does."""
    parse, check = [], []
    for _ in range(repeats):
        start = clock()
        json.loads(text)
        parse.append(clock() - start)
        start = clock()
        load_posted_document(json.loads(text))
        check.append(clock() - start)
    return statistics.median(parse), statistics.median(check)


def what_if_table():
    """Measured (torch) against predicted peaks per schedule, with the difference in percent of the measured."""
    print(f"\n{'example':18} {'schedule':12} {'measured B':>11} {'predicted B':>12} {'diff':>8} "
          f"{'before update: measured':>24} {'predicted':>10} {'diff':>8}  grads")
    for example in WHAT_IF_EXAMPLES:
        found = what_ifs(load_build(ROOT / "examples" / "torch" / f"{example}.py"), parse_policies(WHAT_IF_POLICIES))
        for s in found.document["schedules"]:
            measured, predicted = s["executed_backward_peak_bytes"], s["predicted_backward_peak_bytes"]
            print(f"{example:18} {schedule_label(s):12} {s['executed_peak_bytes']:11,} {s['predicted_peak_bytes']:12,} "
                  f"{s['predicted_error']:+8.3%} {measured:24,} {predicted:10,} {(predicted - measured) / measured:+8.3%}"
                  f"  {'equal' if s['grads_match'] else 'differ'}")
    print("measured = the checkpointed step run by torch.utils.checkpoint(use_reentrant=False) and recorded; "
          "predicted = backend.planner.torch_timeline from the plain step's document alone")


def rank_step_times(model_file, repeats):
    """On one rank: median seconds of the plain distributed step and of the same step recorded (record_rank: the
    hooks, the collectives' entries and the document), each after one warm-up step on a fresh build(), interleaved;
    every rank starts each timed step together (a barrier), as the collectives make them finish together."""
    build = load_build(model_file)
    plain, recorded = [], []
    for repeat in range(repeats + 1):                    # repeat 0 warms up, untimed
        step = step_of(build)
        warm_up(*step, steps=1)
        dist.barrier()
        start = time.perf_counter()
        run_step(*step)
        plain_s = time.perf_counter() - start
        step = step_of(build)
        warm_up(*step, steps=1)
        dist.barrier()
        start = time.perf_counter()
        document = record_rank(*step)
        recorded_s = time.perf_counter() - start
        if repeat:
            plain.append(plain_s), recorded.append(recorded_s)
    return statistics.median(plain), statistics.median(recorded), document["summary"]["peak_bytes"]


def rank_table(repeats):
    print(f"\n{'example, 2 ranks':18} {'rank':>4} {'plain ms':>9} {'recorded ms':>12} {'overhead':>9} {'peak B':>12}")
    for example in RANK_EXAMPLES:
        found = run_ranks(rank_step_times, RANKS, str(ROOT / "examples" / "torch" / f"{example}.py"), repeats)
        for rank, (plain, recorded, peak) in enumerate(found):
            print(f"{example:18} {rank:4d} {plain * 1e3:9.2f} {recorded * 1e3:12.2f} {recorded / plain:8.1f}× {peak:12,}")
    print("per rank, wall clock: recorded = record_rank (the step under the hooks, its collectives' entries and the "
          "rank's document) ÷ the plain distributed step; both after one warm-up step, gloo over 127.0.0.1")


GOAL_OVERHEAD, GOAL_BUILD, GOAL_MIN_PLAIN_MS = 3.0, 2.0, 5.0     # issue 28: recording ≤ 3× plain, the document ≤ 2× more


def goal(plain, bare, hooked, built):
    """The issue's goal for one model, in words: met or missed (which part), the floor beside it; a `*` when its plain
    step took under 5 ms, which the goal leaves out (transformer_tiny's ~5 ms step falls either side on a busy machine)."""
    missed = [part for part, ratio, limit in (("rec", hooked / plain, GOAL_OVERHEAD), ("build", built / plain, GOAL_BUILD))
              if ratio > limit]
    outside = "*" if plain * 1e3 < GOAL_MIN_PLAIN_MS else ""
    return f"{'missed ' + '+'.join(missed) if missed else 'met'} (floor {bare / plain:.1f}×){outside}"


def test_model_builds():
    """(name, build) for each of TEST_MODELS whose module imports here (T5 needs transformers)."""
    import importlib
    builds = []
    for name, (module, builder, kwargs) in TEST_MODELS.items():
        try:
            found = getattr(importlib.import_module(f"tests.importers.{module}"), builder)
            if name == "t5_tiny":
                found()                         # importorskip: raises when transformers is absent
        except BaseException as missing:        # pytest's Skipped is a BaseException
            if isinstance(missing, (KeyboardInterrupt, SystemExit)):
                raise
            print(f"{name}: left out ({missing})")
            continue
        builds.append((name, lambda found=found, kwargs=kwargs: found(**kwargs)))
    return builds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    parser.add_argument("--repeats", type=int, default=9, help="timed repeats per figure (default 9)")
    parser.add_argument("--cpu", action="store_true", help="the process's CPU clock instead of the wall clock")
    parser.add_argument("--no-ranks", action="store_true", help="leave out the distributed examples' table")
    parser.add_argument("--overhead-only", action="store_true", help="only the overhead table (no what-ifs, no ranks)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    clock = time.process_time if args.cpu else time.perf_counter
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), median of {args.repeats}, "
          f"{'CPU' if args.cpu else 'wall'} clock")
    print(f"{'example':18} {'plain ms':>9} {'bare mode':>10} {'profiler':>9} {'hooked ms':>10} {'overhead':>9} {'build ms':>9} "
          f"{'build/plain':>11} {'goal':>26} {'ops':>6} {'run.json KiB':>13} {'check ms':>9} {'check/parse':>12}")
    models = [(example, load_build(ROOT / "examples" / "torch" / f"{example}.py")) for example in EXAMPLES]
    for example, build in models + test_model_builds():
        plain, bare, profiled, hooked, built, document = step_times(build, args.repeats, clock)
        text = json.dumps(pack(document), separators=(",", ":"))       # what the command line writes and posts
        parse, check = check_times(text, args.repeats, clock)
        print(f"{example:18} {plain * 1e3:9.2f} {bare / plain:9.1f}× {profiled / plain:8.1f}× {hooked * 1e3:10.2f} {hooked / plain:8.1f}× "
              f"{built * 1e3:9.2f} {built / plain:10.1f}× {goal(plain, bare, hooked, built):>26} "
              f"{document['summary']['entries']:6d} {len(text) / 1024:13.1f} {check * 1e3:9.1f} "
              f"{check / parse:11.1f}×")
    print(f"overhead = hooked ÷ plain; goal (issue 28): overhead ≤ {GOAL_OVERHEAD:g}× and build ≤ {GOAL_BUILD:g}× plain, "
          f"with the floor beside it (* = a plain step under {GOAL_MIN_PLAIN_MS:g} ms, outside the goal); bare mode = a pass-through "
          "dispatch mode and saved-tensor hooks ÷ plain, the floor no dispatch-mode recorder goes below; profiler = torch's "
          "C++ profiler recording every op's input shapes and the allocator's events, its results handed over, ÷ plain "
          "(what a recorder below Python dispatch built on it would pay before any work of its own); build = the "
          "document from the recorder; check = parse + schema + consistency of the run.json, as POST /api/traces")
    if args.overhead_only:
        return
    what_if_table()
    if not args.no_ranks and dist.is_available() and dist.is_gloo_available():
        rank_table(args.repeats)


if __name__ == "__main__":
    main()
