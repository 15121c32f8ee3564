"""A real run of many ranks for the tests that read one: examples/torch/MODEL on 2 gloo ranks over loopback, recorded
by the command line (`python -m backend.importers.torch MODEL --nproc 2 --warmup 1 --out run.json`) into a
directory the caller owns; skipped, with the reason, where torch or its gloo backend is missing."""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RECORDING_TIMEOUT_S = 300
FSDP_RANKS_GROUP = "gpt-fsdp-ranks"     # the xdist group of the modules that read tests/conftest.py's fsdp_ranks_run


def record_ranks(directory, model="gpt_fsdp.py", nproc=2):
    """(path of run.json, its object {world_size, ranks}) of examples/torch/`model` recorded on `nproc` ranks."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is an optional extra (pip install -r requirements-torch.txt): no run of many ranks to record")
    out = Path(directory) / "run.json"
    done = subprocess.run([sys.executable, "-m", "backend.importers.torch", str(ROOT / "examples" / "torch" / model),
                           "--nproc", str(nproc), "--warmup", "1", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=RECORDING_TIMEOUT_S)
    if done.returncode != 0 and "gloo" in done.stderr.lower() and not out.exists():
        pytest.skip(f"torch.distributed cannot run gloo ranks here: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr[-3000:]
    return out, json.loads(out.read_text())
