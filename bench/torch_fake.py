"""A 7B model's sharded step recorded on this machine without the hardware: examples/torch/llama7b_fsdp.py (Llama 2
7B's shape, FSDP2 per layer, bf16 mixed precision, AdamW, 4,096-token sequences) on 8 fake ranks, under
FakeTensorMode, through the command line as a user runs it; the wall time and peak RSS against the goal (≤ 120 s,
≤ 4 GB), what rank 0 would hold, and its peak against torch's own FSDPMemTracker on the same fake step (goal: within
1%; torch.distributed._tools.fsdp2_mem_tracker).

    .venv/bin/python bench/torch_fake.py [--world-size 8] [--warmup 1]      (needs torch==2.13.0 in .venv)

The baseline in the same run: the same command at 2 layers, whose time is the fixed cost (imports, build(), the
fake process group), so the ratio says what the 30 extra layers cost on this machine today.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backend.trace.document_versions import unpack  # noqa: E402
from tests.importers.fsdp_tracker import tracker_peak  # noqa: E402

GOAL_SECONDS, GOAL_RSS_BYTES = 120, 4 * 2**30
EXAMPLE = ROOT / "examples" / "torch" / "llama7b_fsdp.py"


def run(out, world_size, warmup, layers=None):
    """(seconds, peak RSS bytes of the child, the document) of one --fake recording."""
    env = dict(os.environ, **({"TAPESCOPE_LLAMA_LAYERS": str(layers)} if layers else {}))
    command = [sys.executable, "-m", "backend.importers.torch", str(EXAMPLE), "--fake", "--world-size",
               str(world_size), "--warmup", str(warmup), "--allocator", "cuda", "--out", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    rss = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before) * 1024     # kB on Linux
    return seconds, rss, unpack(json.loads(Path(out).read_text()))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world-size", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=1, help="plain fake steps first (AdamW's state; default 1)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        base_s, _, _ = run(Path(scratch) / "small.json", args.world_size, args.warmup, layers=2)
        seconds, rss, document = run(Path(scratch) / "run.json", args.world_size, args.warmup)
    summary = document["summary"]
    gib = 2**30
    print(f"llama7b_fsdp.py on {args.world_size} fake ranks (--fake, --warmup {args.warmup}): "
          f"{summary['entries']} ops, {summary['steps']} steps")
    print(f"{'':22} {'seconds':>8} {'peak RSS GiB':>13} {'goal':>22}")
    print(f"{'32 layers (7B)':22} {seconds:8.1f} {rss / gib:13.2f} "
          f"{'met' if seconds <= GOAL_SECONDS and rss <= GOAL_RSS_BYTES else 'missed':>22}")
    print(f"{'2 layers (baseline)':22} {base_s:8.1f} {'':>13} {f'32 layers ÷ 2: {seconds / base_s:.1f}×':>22}")
    by_kind = summary["by_kind_at_peak"]
    print(f"rank 0's peak: {summary['peak_bytes'] / gib:.2f} GiB allocated, "
          f"{summary['reserved_peak_bytes'] / gib:.2f} GiB reserved (CUDA caching allocator replayed), "
          f"in {summary['peak']['phase']}; at it: "
          + ", ".join(f"{kind} {nbytes / gib:.2f} GiB" for kind, nbytes in by_kind.items() if nbytes))
    tracked = tracker_peak(EXAMPLE, args.world_size, args.warmup)
    print(f"FSDPMemTracker's peak on the same fake step: {tracked:,} B; ours {summary['peak_bytes']:,} B "
          f"({summary['peak_bytes'] / tracked - 1:+.3%}; goal within 1%)")
    print(f"goal (issue 30): ≤ {GOAL_SECONDS} s and ≤ {GOAL_RSS_BYTES / gib:.0f} GiB of RSS on this machine")


if __name__ == "__main__":
    main()
