"""Benchmark: the explorer in headless Chromium on real engine traces of ~1,000 and ~5,000 tape entries.

The traces come from the engine (backend.driver.trace_spec on a deep MLP built from nested repeat blocks), and each
app's /api/trace answers that document (a middleware in the bench's server serves the file over plain HTTP; a
Playwright route spent seconds moving 8 MB), so only the page differs between the runs compared.
For each trace it prints navigation -> interactive (the graph drawn and the player on its step: the page's
"tapescope:interactive" mark, or "tapescope:ready" on a page without it; targets: 1,000 entries <= 1.5 s, 5,000 <= 3 s)
and -> everything drawn, charts too ("tapescope:ready"), a fold and an unfold of a group (<= 100 ms), the median frame
while the page's own player plays at its fastest speed (<= 16.7 ms), with the main thread's script, style and layout
time per frame, the median frame while stepping by hand (one setStep a frame: a held arrow key, a scrub), and the
page's JS heap after a garbage collection (<= 150 MB at 5,000). --repeat N measures each page N
times, alternating, and prints medians; the load average is printed before and after, since the machine is shared. With --baseline DIR (a checkout of main, e.g. `git worktree add --detach /tmp/base
main`, with static/vendor copied in) the same figures for that checkout's page are printed beside, measured in the
same run; --synthetic adds bench/synthetic_trace.py's documents of the same node counts.
--fake-run ENTRIES records examples/torch/llama7b_fsdp.py on 8 fake ranks with as many layers as make about that
many tape entries (small widths: the entry count is what the page pays for; torch must be installed) and opens the
run.json as a person does (the Open run.json… input), printing the time from choosing the file to the explorer
drawn on it (target at 20,000 entries: 3 s), the boxes drawn, the median frame stepping by hand and the JS heap.

Run: .venv/bin/python bench/browser.py [--baseline DIR] [--repeat N] [--synthetic] [--fake-run 20000] [entries ...]
"""
import argparse
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from backend.driver import trace_spec  # noqa: E402
from bench.synthetic_trace import synthetic_trace  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

FRAMES = 120
TARGETS = {"ready_s": {1000: 1.5, 5000: 3.0}, "fold_ms": 100, "frame_ms": 16.7, "heap_mb": 150}
# Plays from step 0 with the page's own player at its fastest speed (60 steps/s, one a frame) for `frames` animation
# frames; returns each frame's interval (ms) and the step reached.
PLAY_SCRIPT = """frames => new Promise(resolve => {
  const speed = document.getElementById('speed');
  speed.value = '60';
  speed.dispatchEvent(new Event('change'));
  window.tapescope.setStep(0);
  const play = document.querySelector('[data-testid=play]');
  const intervals = [];
  let previous = null;
  play.click();
  function frame(now) {
    if (previous !== null) intervals.push(now - previous);
    previous = now;
    if (intervals.length < frames) requestAnimationFrame(frame);
    else { play.click(); resolve({intervals, step: window.tapescope.getStep()}); }
  }
  requestAnimationFrame(frame);
})"""
# A person stepping by hand as fast as frames come (a held arrow key, a scrub): one window.tapescope.setStep a frame.
STEP_SCRIPT = """frames => new Promise(resolve => {
  const last = window.tapescope.getTrace().steps.length - 1;
  const intervals = [];
  let step = 0, previous = null;
  function frame(now) {
    if (previous !== null) intervals.push(now - previous);
    previous = now;
    step = step >= last ? 0 : step + 1;
    window.tapescope.setStep(step);
    if (intervals.length < frames) requestAnimationFrame(frame); else resolve({intervals});
  }
  requestAnimationFrame(frame);
})"""
MAIN_THREAD = ("ScriptDuration", "RecalcStyleDuration", "LayoutDuration")   # CDP Performance metrics, in seconds
# Clicks the first folded group and times it until its open frame is drawn and painted; then folds it back the same way.
FOLD_SCRIPT = """async () => {
  const graph = document.querySelector('[data-testid=graph]');
  const painted = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  const until = (test) => new Promise((resolve) => { const check = () => (test() ? resolve() : requestAnimationFrame(check)); check(); });
  const folded = graph.querySelector('.group-node[data-collapsed=true]');
  if (!folded) return null;
  const id = folded.dataset.groupId;
  const selector = (kind) => `.${kind}[data-group-id="${CSS.escape(id)}"]`;
  let started = performance.now();
  folded.querySelector('rect').dispatchEvent(new MouseEvent('click', { bubbles: true }));
  await until(() => graph.querySelector(selector('group-frame')));
  await painted();
  const unfold = performance.now() - started;
  started = performance.now();
  graph.querySelector(`${selector('group-frame')} .frame-label`).dispatchEvent(new MouseEvent('click', { bubbles: true }));
  await until(() => graph.querySelector(selector('group-node')));
  await painted();
  return { unfold, fold: performance.now() - started, group: id };
}"""


def deep_spec(entries: int) -> dict:
    """A deep MLP of linear + tanh iterations in two nested repeats: about `entries` tape entries (3 per iteration)."""
    iterations = math.ceil(entries / 3)
    outer = math.ceil(iterations / 60)
    inner = round(iterations / outer)
    return {"name": f"deep-{outer}x{inner}", "seed": 0, "dtype": "float32", "batch": 4,
            "input": {"kind": "features", "size": 8},
            "layers": [{"type": "repeat", "times": outer, "layers": [
                {"type": "repeat", "times": inner, "layers": [{"type": "linear", "out": 8}, {"type": "tanh"}]}]},
                {"type": "linear", "out": 1}],
            "loss": {"type": "mse", "target": "random"}, "optimizer": {"type": "sgd", "lr": 0.01}}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


DOCUMENT_FILE = Path(tempfile.mkdtemp()) / "trace.json"   # what every bench server answers POST /api/trace with
SERVER = """
import sys
sys.path.insert(0, '.')
from pathlib import Path
from werkzeug.serving import run_simple
from app import create_app

app = create_app({{'TESTING': True, 'DATABASE_URL': 'sqlite:///{folder}/bench.sqlite'}})

def with_fixed_trace(environ, start_response):
    if environ['PATH_INFO'] == '/api/trace' and environ['REQUEST_METHOD'] == 'POST':
        body = Path({document!r}).read_bytes()
        start_response('200 OK', [('Content-Type', 'application/json'), ('Content-Length', str(len(body)))])
        return [body]
    return app(environ, start_response)

run_simple('127.0.0.1', {port}, with_fixed_trace, threaded=True)
"""


def serve(root: Path):
    """The app of the checkout at `root`, in its own process (two checkouts cannot share one interpreter)."""
    port = free_port()
    code = SERVER.format(folder=tempfile.mkdtemp(), document=str(DOCUMENT_FILE), port=port)
    process = subprocess.Popen([sys.executable, "-c", code], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    for _ in range(200):
        try:
            urllib.request.urlopen(url + "api/presets", timeout=1)
            return process, url
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"the app in {root} did not start")


MARK_AT = "name => performance.getEntriesByName(name).at(-1)?.startTime ?? null"


def measure(browser, url):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(url)
    page.wait_for_selector(".explorer[data-ready=true]", timeout=120_000)
    ready_ms = page.evaluate(MARK_AT, "tapescope:ready")
    interactive_ms = page.evaluate(MARK_AT, "tapescope:interactive") or ready_ms
    drawn = page.locator("[data-testid=graph] .node").count()
    folding = page.evaluate(FOLD_SCRIPT)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    metrics = lambda: {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}  # noqa: E731
    before = metrics()
    played = page.evaluate(PLAY_SCRIPT, FRAMES)
    after = metrics()
    per_frame = {name: (after[name] - before[name]) * 1000 / FRAMES for name in MAIN_THREAD}
    stepped = page.evaluate(STEP_SCRIPT, FRAMES)
    cdp.send("HeapProfiler.collectGarbage")
    heap_mb = cdp.send("Runtime.getHeapUsage")["usedSize"] / 2**20
    page.close()
    return {"drawn": drawn, "ready_s": interactive_ms / 1000, "drawn_s": ready_ms / 1000,
            "frame_ms": statistics.median(played["intervals"]), "step_frame_ms": statistics.median(stepped["intervals"]),
            "script_ms": per_frame["ScriptDuration"],
            "render_ms": per_frame["RecalcStyleDuration"] + per_frame["LayoutDuration"], "heap_mb": heap_mb,
            "unfold_ms": folding["unfold"] if folding else None, "fold_ms": folding["fold"] if folding else None}


ENTRIES_PER_LLAMA_LAYER = 132          # measured: 206 layers made 27,232 entries (forward, backward, AdamW)
FAKE_SIZES = {"WIDTH": 256, "HEADS": 4, "HIDDEN": 688, "VOCAB": 1000, "SEQ": 64}
OPENED = ("() => window.tapescope.getTrace()?.source?.fake "
          "&& document.querySelector('.explorer').dataset.ready === 'true'")


def fake_run(entries, folder):
    """A fake-mode run.json of the Llama example with about `entries` tape entries: (path, entries it has)."""
    layers = max(1, round(entries / ENTRIES_PER_LLAMA_LAYER))
    env = dict(os.environ, TAPESCOPE_LLAMA_LAYERS=str(layers),
               **{f"TAPESCOPE_LLAMA_{name}": str(value) for name, value in FAKE_SIZES.items()})
    path = Path(folder) / "fake-run.json"
    subprocess.run([sys.executable, "-m", "backend.importers.torch", "examples/torch/llama7b_fsdp.py", "--fake",
                    "--world-size", "8", "--out", str(path)], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    from backend.trace.document_versions import unpack
    return path, len(unpack(json.loads(path.read_text()))["tape"])


def measure_opened(browser, url, path):
    """Open a run.json through the page's own file input; time it to the explorer drawn on it."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(url)
    page.wait_for_selector(".explorer[data-ready=true]", timeout=120_000)
    started = time.perf_counter()
    page.set_input_files("[data-testid=open-run]", str(path))
    page.wait_for_function(OPENED, timeout=120_000)
    opened_s = time.perf_counter() - started
    drawn = page.locator("[data-testid=graph] .node").count()
    stepped = page.evaluate(STEP_SCRIPT, FRAMES)
    cdp = page.context.new_cdp_session(page)
    cdp.send("HeapProfiler.collectGarbage")
    heap_mb = cdp.send("Runtime.getHeapUsage")["usedSize"] / 2**20
    page.close()
    return {"opened_s": opened_s, "drawn": drawn, "step_frame_ms": statistics.median(stepped["intervals"]),
            "heap_mb": heap_mb}


def median_of(results):
    """Each figure's median over repeated measurements of one page (the box count from the first)."""
    keys = [key for key in results[0] if key != "drawn"]
    middle = {key: statistics.median(r[key] for r in results) if results[0][key] is not None else None for key in keys}
    return {"drawn": results[0]["drawn"], **middle}


def load_average() -> str:
    return " / ".join(f"{value:.2f}" for value in os.getloadavg())


def row(label, result, baseline):
    def cell(key, digits=2):
        value = result[key]
        text = "—" if value is None else f"{value:.{digits}f}"
        if baseline is None:
            return text
        before = baseline[key]
        ratio = f" ({value / before:.2f}×)" if value is not None and before else ""
        return f"{text} [main {'—' if before is None else f'{before:.{digits}f}'}]{ratio}"
    return (f"{label}: {result['drawn']} boxes drawn · interactive {cell('ready_s')} s · all drawn {cell('drawn_s')} s"
            f" · unfold {cell('unfold_ms', 0)} ms · fold {cell('fold_ms', 0)} ms · median frame {cell('frame_ms', 1)} ms"
            f" (per frame: script {cell('script_ms', 2)} ms, style + layout {cell('render_ms', 2)} ms)"
            f" · median frame stepping by hand {cell('step_frame_ms', 1)} ms"
            f" · JS heap {cell('heap_mb', 1)} MB")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("entries", nargs="*", type=int, default=[1000, 5000])
    parser.add_argument("--baseline", type=Path, help="a checkout of main to measure beside this one")
    parser.add_argument("--synthetic", action="store_true", help="also bench/synthetic_trace.py's documents")
    parser.add_argument("--repeat", type=int, default=1, help="measure each page this many times; print medians")
    parser.add_argument("--fake-run", type=int, metavar="ENTRIES", help="also open a fake-mode run.json this big")
    args = parser.parse_args()
    documents = []
    for entries in args.entries:
        trace = trace_spec(deep_spec(entries))
        nodes = len(trace["graph"]["nodes"]) + len(trace["graph"]["leaves"])
        documents.append((f"{trace['spec']['name']} ({len(trace['tape'])} entries, {nodes} nodes)", entries, json.dumps(trace)))
        if args.synthetic:
            documents.append((f"synthetic ({nodes} nodes)", entries, json.dumps(synthetic_trace(nodes))))
    servers = [("this", *serve(ROOT))] + ([("main", *serve(args.baseline.resolve()))] if args.baseline else [])
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            print(f"load average (1 / 5 / 15 min): {load_average()}")
            for label, entries, body in documents:
                DOCUMENT_FILE.write_text(body)
                runs = {name: [] for name, _, _ in servers}
                for _ in range(max(1, args.repeat)):
                    for name, _, url in servers:
                        runs[name].append(measure(browser, url))
                results = {name: median_of(measured) for name, measured in runs.items()}
                print(row(label, results["this"], results.get("main")))
                target = TARGETS["ready_s"].get(entries)
                print(f"   targets: interactive <= {target or '—'} s, fold/unfold <= {TARGETS['fold_ms']} ms, "
                      f"median frame <= {TARGETS['frame_ms']} ms, JS heap <= {TARGETS['heap_mb']} MB")
            if args.fake_run:
                path, entries = fake_run(args.fake_run, tempfile.mkdtemp())
                for name, _, url in servers:
                    runs = [measure_opened(browser, url, path) for _ in range(max(1, args.repeat))]
                    middle = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
                    print(f"fake-mode run.json ({entries:,} entries, {path.stat().st_size / 2**20:.1f} MiB) on {name}: "
                          f"opened and drawn in {middle['opened_s']:.2f} s (target <= 3 s) · {middle['drawn']:.0f} "
                          f"boxes · median frame stepping by hand {middle['step_frame_ms']:.1f} ms · JS heap "
                          f"{middle['heap_mb']:.1f} MB")
            print(f"load average (1 / 5 / 15 min): {load_average()}")
            browser.close()
    finally:
        for _, process, _ in servers:
            process.terminate()


if __name__ == "__main__":
    main()
