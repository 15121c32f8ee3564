"""The CUDA caching allocator's replay against the real one: for a small model's training step, what the importer's
`--allocator cuda` (backend/trace/cuda_allocator.py, replayed on the step recorded on the CPU, as the command line
does) says the step reserves and allocates, ÷ what torch.cuda.max_memory_reserved() and max_memory_allocated()
measure over the same step run on the GPU; with expandable_segments off and on (PYTORCH_CUDA_ALLOC_CONF).

    .venv/bin/python bench/cuda_allocator.py [--examples mlp,gpt]        (needs a CUDA GPU and torch with CUDA)

The baseline in the same run is torch's own allocator: each configuration is measured in a fresh process (the
allocator reads PYTORCH_CUDA_ALLOC_CONF once, when CUDA starts), which builds the example on the GPU (build() under
`torch.device("cuda")`) and runs one step (forward, loss, backward, optimizer step, as the importer records it, no
warm-up); the peaks count from that process's first allocation, as the document's do from step 0. Without CUDA it
says so in one line and exits 0.

What differs by design: the simulated step is the CPU's ops (on a GPU, scaled_dot_product_attention picks a
flash or memory-efficient kernel that saves other tensors), and cuBLAS's workspace, which the GPU allocates through
the caching allocator, is not in a CPU recording; the allocated ratio shows how much of a reserved difference is
these rather than the allocator's rules.
"""
import argparse
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from backend.importers.torch_step import load_build, record_step, run_step, step_of  # noqa: E402
from backend.trace.cuda_allocator import attach_reserved  # noqa: E402

EXAMPLES = "mlp,gpt"
EXPANDABLE = "expandable_segments:True"


def example_file(name):
    return ROOT / "examples" / "torch" / f"{name}.py"


def measured_on_gpu(name):
    """In this process (a fresh one, its PYTORCH_CUDA_ALLOC_CONF set by the caller): build the example on the GPU,
    run one step, and return torch's peaks and how many segments it cudaMalloc'd (or mapped, when expandable)."""
    build = load_build(example_file(name))
    with torch.device("cuda"):
        step = step_of(build)
    run_step(*step)
    torch.cuda.synchronize()
    stats = torch.cuda.memory_stats()
    return {"reserved": torch.cuda.max_memory_reserved(), "allocated": torch.cuda.max_memory_allocated(),
            "segments": stats.get("segment.all.allocated", 0), "device": torch.cuda.get_device_name()}


def measure(name, expandable):
    """measured_on_gpu(name) in a child process with expandable_segments off or on."""
    env = {key: value for key, value in os.environ.items() if key != "PYTORCH_CUDA_ALLOC_CONF"}
    if expandable:
        env["PYTORCH_CUDA_ALLOC_CONF"] = EXPANDABLE
    done = subprocess.run([sys.executable, __file__, "--measure", name], cwd=ROOT, env=env, check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@functools.lru_cache(maxsize=None)
def recorded(name):
    """The example's step recorded on the CPU, as `python -m backend.importers.torch FILE` records it."""
    return record_step(*step_of(load_build(example_file(name))))


def simulated(name, expandable):
    """The importer's figures for the same step: the CPU recording with the allocator's rules replayed on it
    (`--allocator cuda`, or `cuda-expandable`)."""
    document = attach_reserved(recorded(name), expandable_segments=expandable)     # rewrites the same fields
    summary = document["summary"]
    return {"reserved": summary["reserved_peak_bytes"], "allocated": summary["allocator"]["allocated_peak_bytes"],
            "segments": summary["allocator"]["segments_made"], "live": summary["peak_bytes"]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", default=EXAMPLES, help=f"examples/torch/ files, comma-separated (default {EXAMPLES})")
    parser.add_argument("--measure", metavar="EXAMPLE", help=argparse.SUPPRESS)     # the child: one GPU step
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print(f"bench/cuda_allocator.py needs a CUDA GPU: torch {torch.__version__} sees none here, nothing measured.")
        return 0
    if args.measure:
        print(json.dumps(measured_on_gpu(args.measure)))
        return 0
    rows = []
    for name in args.examples.split(","):
        for expandable in (False, True):
            rows.append((name, expandable, measure(name, expandable), simulated(name, expandable)))
    print(f"torch {torch.__version__} on {rows[0][2]['device']}; one training step per example, no warm-up")
    print(f"{'example':10} {'expandable':>10} {'reserved: measured B':>21} {'simulated B':>12} {'sim/meas':>9} "
          f"{'allocated: measured B':>22} {'simulated B':>12} {'sim/meas':>9} {'segments meas/sim':>18}")
    for name, expandable, gpu, ours in rows:
        print(f"{name:10} {'on' if expandable else 'off':>10} {gpu['reserved']:21,} {ours['reserved']:12,} "
              f"{ours['reserved'] / gpu['reserved']:8.3f}× {gpu['allocated']:22,} {ours['allocated']:12,} "
              f"{ours['allocated'] / gpu['allocated']:8.3f}× {gpu['segments']:>9}/{ours['segments']}")
    print("measured = torch.cuda.max_memory_reserved() / max_memory_allocated() over the step on the GPU, in a fresh "
          "process per row (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True when on); simulated = the step recorded "
          "on the CPU and replayed through backend/trace/cuda_allocator.py (summary.reserved_peak_bytes and "
          "allocator.allocated_peak_bytes); segments = cudaMalloc calls (memory_stats' segment.all.allocated) / "
          "allocator.segments_made")
    return 0


if __name__ == "__main__":
    sys.exit(main())
