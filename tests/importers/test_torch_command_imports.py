"""`python -m backend.importers.torch` runs torch.py once, as __main__: nothing it imports imports it back (the
cycle through torch_checkpoint.py loaded it a second time, as backend.importers.torch)."""
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is an optional extra (pip install torch==2.13.0)")
pytestmark = pytest.mark.xdist_group("torch-import")

ROOT = Path(__file__).resolve().parents[2]


def test_the_command_line_is_loaded_once():
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "backend.importers.torch", "--help"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    imported = [line.rpartition("|")[2].strip() for line in result.stderr.splitlines() if line.startswith("import time")]
    assert "backend.importers.torch_checkpoint" in imported          # the reader sees the command's imports
    assert "backend.importers.torch" not in imported
