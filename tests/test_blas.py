"""The app runs BLAS on one thread, as the work price assumes, whatever the environment asked for and whoever
imported numpy first (checked in a fresh process, with threadpoolctl's own report)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import json, numpy                      # numpy first, on the environment's threads
from threadpoolctl import threadpool_info
before = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
from app import create_app
create_app({"TESTING": True, "DATABASE_URL": "sqlite://"})
import scipy.optimize                   # a BLAS loaded after the app (the planner's)
after = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
print(json.dumps({"before": before, "after": after}))
"""


@pytest.mark.parametrize("entry", ["app", "gunicorn.conf.py"])
def test_the_app_pins_blas_to_one_thread(entry):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    env["OPENBLAS_NUM_THREADS"] = "2"           # what a two-core machine's default comes to
    probe = PROBE if entry == "app" else "import runpy; runpy.run_path('gunicorn.conf.py')\n" + PROBE
    run = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["after"] and set(report["after"]) == {1}, report
