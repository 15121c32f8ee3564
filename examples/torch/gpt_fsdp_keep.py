"""gpt_fsdp.py with reshard_after_forward=False (ZeRO-2): each block's all-gathered parameters stay from its
forward to its backward (no second all-gather), so the peak holds every block unsharded at once.

    .venv/bin/python -m backend.importers.torch examples/torch/gpt_fsdp_keep.py --nproc 2 --warmup 1 --out run.json"""
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("tapescope_example_gpt_fsdp", Path(__file__).with_name("gpt_fsdp.py"))
gpt_fsdp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpt_fsdp)


def build():
    return gpt_fsdp.build(reshard_after_forward=False)
