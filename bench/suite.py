"""Benchmark: the test suite itself, against issue 24's goal of 5 minutes of wall time on this 2-core machine.

Runs `make test`'s pytest command (or the paths given) and prints where the time went: the wall time ÷ the goal;
the machine's busy and idle CPU seconds over the run (from /proc/stat: on two cores, 300 s holds 600 CPU-s, so a
suite that keeps both busy needs its CPU, not its scheduling, to shrink); CPU seconds by kind of process (Chromium's
renderer, browser and GPU processes, Playwright's node driver, the Python test workers, PostgreSQL), sampled from
/proc every half second; and the test files that cost most, each with its wall time, its workers' CPU and the CPU
of the processes they drove (bench/suite_probe.py), the same summed by test folder, and the Python CPU no test's
worker accounts for (collection, subprocesses). Everything else on the machine counts too: run it idle.

    .venv/bin/python bench/suite.py [pytest paths and options, e.g. tests/e2e -n 2]
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.suite_probe import PROBE_DIR, TICKS, process_stat  # noqa: E402

GOAL_S = 300.0
SAMPLE_S = 0.5
PYTHON = "python (test workers, servers, ranks)"
PYTEST = [sys.executable, "-m", "pytest", "-q", "-n", "auto", "--dist", "loadgroup", "-p", "bench.suite_probe"]


def machine_cpu():
    """(busy, idle) CPU seconds since boot, all cores: user, nice, system, irq, softirq, steal against idle, iowait."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / TICKS, (idle + iowait) / TICKS


def process_kind(pid):
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    if "chromium" in command or "chrome" in command:
        for kind in ("renderer", "gpu-process", "utility", "zygote"):
            if f"--type={kind}" in command:
                return f"chromium {kind}"
        return "chromium browser"
    if "run-driver" in command:
        return "playwright node driver"
    if "postgres" in command:
        return "postgresql"
    if "python" in command:
        return PYTHON
    return None


class ProcessSampler:
    """Every half second, the CPU each process has used so far (its own, not its children's), by kind; a process
    that ends between two samples loses at most its last half second."""

    def __init__(self):
        self.last = {}          # pid -> (kind, CPU s at the last sample)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stopped.wait(SAMPLE_S):
            self.sample()

    def sample(self):
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            stat = process_stat(name)
            known = self.last.get(int(name))
            # a renderer forked from the zygote shows the zygote's command line until it renames itself: read again
            kind = known[0] if known and known[0] != "chromium zygote" else process_kind(name)
            if stat is not None and kind:
                self.last[int(name)] = (kind, stat[1])

    def by_kind(self, before):
        """CPU s by kind since `before` (a copy of `last` taken at the start)."""
        spent = Counter()
        for pid, (kind, cpu) in self.last.items():
            spent[kind] += cpu - before.get(pid, (kind, 0.0))[1]
        return spent


def file_costs(probe_dir):
    """({test file: [tests, wall s, worker CPU s, CPU s beyond the worker]}, CPU s reaped late) from the probe's
    lines. CPU beyond the worker that the test's own wall time could not hold on every core (a child that lived
    through earlier tests, reaped during this one) is not this test's: it is counted apart, as reaped late."""
    costs, late = defaultdict(lambda: [0, 0.0, 0.0, 0.0]), 0.0
    for lines in Path(probe_dir).glob("*.jsonl"):
        for line in lines.read_text().splitlines():
            nodeid, wall, worker, beyond = json.loads(line)
            beyond = max(beyond, 0.0)
            if beyond > wall * os.cpu_count() + 0.1:
                late, beyond = late + beyond, 0.0
            cost = costs[nodeid.split("::")[0]]
            cost[0] += 1
            cost[1] += wall
            cost[2] += worker
            cost[3] += beyond
    return costs, late


def print_costs(title, costs, shown=None):
    """A table of {name: [tests, wall s, worker CPU s, beyond CPU s]}, costliest (worker + beyond) first."""
    print(f"\n{title:58} {'tests':>5} {'wall s':>8} {'worker CPU s':>13} {'beyond CPU s':>13}")
    for name, (tests, wall_s, worker, beyond) in sorted(costs.items(), key=lambda item: -(item[1][2] + item[1][3]))[:shown]:
        print(f"{name:58} {tests:5} {wall_s:8.1f} {worker:13.1f} {beyond:13.1f}")


def main(arguments):
    sampler = ProcessSampler()
    with tempfile.TemporaryDirectory(prefix="tapescope-suite-") as probe_dir:
        sampler.sample()
        before = dict(sampler.last)
        busy0, idle0 = machine_cpu()
        started = time.perf_counter()
        sampler.thread.start()
        run = subprocess.run(PYTEST + arguments, cwd=ROOT, env={**os.environ, PROBE_DIR: probe_dir},
                             capture_output=True, text=True)
        wall = time.perf_counter() - started
        sampler.stopped.set()
        sampler.thread.join()
        sampler.sample()
        busy, idle = (now - then for now, then in zip(machine_cpu(), (busy0, idle0)))
        costs, late = file_costs(probe_dir)
    lines = run.stdout.strip().splitlines()
    print(lines[-1] if lines else run.stderr[-2000:])
    failed = [line for line in lines if line.startswith(("FAILED ", "ERROR "))]
    for line in failed:                            # what failed, by name: a run that is fast but red is no result
        print(f"  {line}")
    if failed:                                     # and why: a flaky test may not fail again when run alone
        log = Path(tempfile.gettempdir()) / "tapescope-suite.log"
        log.write_text(run.stdout + run.stderr)
        print(f"  pytest's whole output: {log}")
    print(f"\nwall {wall:.0f} s = {wall / GOAL_S:.2f}× the {GOAL_S:.0f} s goal; machine CPU {busy:.0f} s busy, "
          f"{idle:.0f} s idle ({busy / (busy + idle):.0%} busy on {os.cpu_count()} cores)")
    print("\nCPU s by kind of process")
    for kind, cpu in sampler.by_kind(before).most_common():
        print(f"{cpu:8.1f}  {kind}")
    print_costs("test file", costs, shown=20)
    folders = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for path, cost in costs.items():
        folder = folders[str(Path(path).parent)]
        for i, value in enumerate(cost):
            folder[i] += value
    print_costs("test folder", folders)
    attributed = sum(cost[2] for cost in costs.values())
    print(f"python CPU s in no test's worker: {sampler.by_kind(before).get(PYTHON, 0.0) - attributed:.1f} (the workers' start,"
          " collection and teardown, and the ranks and commands the tests started)")
    print("wall s: the tests' own time, summed over workers; beyond: the browser and subprocesses the tests drove"
          f"\n(and {late:.1f} CPU s of children that lived through earlier tests, reaped during a later one: not attributed)")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
