"""A pytest plugin for bench/suite.py: per test, its wall time and the CPU it cost, in its worker and beyond.

Loaded with `-p bench.suite_probe` while TAPESCOPE_SUITE_PROBE_DIR names a directory; each xdist worker writes one
JSON line per test there: [nodeid, wall s, worker CPU s, CPU s of the processes the worker started]. The last counts
the worker's children it reaped (a command-line subprocess, torch's forked ranks) and, for a test that drives the
browser, every process under the worker (Playwright's node driver, Chromium's browser, renderer and GPU processes),
read from /proc; a full walk of /proc costs ~2 ms, so it is made only around the tests that use the browser. A worker's
last test is read before its teardown: that teardown ends the session, and the worker reaping its browser would count
the browser's whole life again."""
import json
import os
import time
from pathlib import Path

import pytest

PROBE_DIR = "TAPESCOPE_SUITE_PROBE_DIR"
BROWSER_FIXTURES = {"page", "browser", "live_server", "context"}
TICKS = os.sysconf("SC_CLK_TCK")
_BEFORE_SESSION_TEARDOWN = pytest.StashKey()      # a worker's last test's readings, taken before its teardown

_out = None


def process_stat(pid):
    """(parent pid, own CPU s, reaped children's CPU s) of a process, or None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS, (int(fields[13]) + int(fields[14])) / TICKS


def _descendants_cpu(root):
    """CPU s of every live process under `root`, each with the children it reaped, plus root's reaped children."""
    stats = {int(name): process_stat(name) for name in os.listdir("/proc") if name.isdigit()}
    children = {}
    for pid, stat in stats.items():
        if stat is not None:
            children.setdefault(stat[0], []).append(pid)
    total, stack = stats[root][2] if stats.get(root) else 0.0, list(children.get(root, ()))
    while stack:
        pid = stack.pop()
        total += stats[pid][1] + stats[pid][2]
        stack.extend(children.get(pid, ()))
    return total


def _reaped_cpu(pid):
    stat = process_stat(pid)
    return stat[2] if stat else 0.0


def pytest_configure(config):
    global _out
    folder = os.environ.get(PROBE_DIR)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    if folder and (worker != "main" or not config.getoption("numprocesses", None)):
        _out = open(Path(folder) / f"{worker}.jsonl", "w")


def _outside(item):
    """How to read the CPU beyond the worker around `item`."""
    return _descendants_cpu if BROWSER_FIXTURES & set(getattr(item, "fixturenames", ())) else _reaped_cpu


def _readings(item):
    return time.perf_counter(), time.process_time(), _outside(item)(os.getpid())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if _out is None:
        yield
        return
    started = _readings(item)
    yield
    ended = item.stash.get(_BEFORE_SESSION_TEARDOWN, None) or _readings(item)
    _out.write(json.dumps([item.nodeid, *(end - start for end, start in zip(ended, started))]) + "\n")
    _out.flush()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    if _out is not None and nextitem is None:
        item.stash[_BEFORE_SESSION_TEARDOWN] = _readings(item)
    yield
