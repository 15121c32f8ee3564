"""Benchmark: the explorer in headless Chromium on synthetic traces of 1,000 and 5,000 nodes.

Prints the time from navigation to a drawn, interactive graph (targets: 1,000 nodes < 1.5 s, 5,000 < 5 s) and
the median frame while playing (target < 16 ms). The page's own /api/trace answer is replaced by the
synthetic document, so nothing else changes. Run: .venv/bin/python bench/browser.py [node counts...]
"""
import json
import statistics
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import sync_playwright  # noqa: E402
from werkzeug.serving import make_server  # noqa: E402

from app import create_app  # noqa: E402
from bench.synthetic_trace import synthetic_trace  # noqa: E402
from tests.conftest import CHROMIUM_ARGS  # noqa: E402

FRAMES = 120
# Plays FRAMES steps, one per animation frame; returns each step's script time and each frame's interval (ms).
PLAY_SCRIPT = """frames => new Promise(resolve => {
  const last = window.tapescope.getTrace().steps.length - 1;
  const work = [], intervals = [];
  let step = 0, previous = null;
  function frame(now) {
    if (previous !== null) intervals.push(now - previous);
    previous = now;
    const started = performance.now();
    step = step >= last ? 0 : step + 1;
    window.tapescope.setStep(step);
    work.push(performance.now() - started);
    if (work.length < frames) requestAnimationFrame(frame); else resolve({work, intervals});
  }
  requestAnimationFrame(frame);
})"""


def serve():
    folder = tempfile.mkdtemp()
    app = create_app({"TESTING": True, "DATABASE_URL": f"sqlite:///{folder}/bench.sqlite"})
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}/"


def measure(browser, url, total_nodes):
    body = json.dumps(synthetic_trace(total_nodes))
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.route("**/api/trace", lambda route: route.fulfill(status=200, content_type="application/json", body=body))
    page.goto(url)
    page.wait_for_selector(".explorer[data-ready=true]", timeout=120_000)
    ready_ms = page.evaluate("() => performance.getEntriesByName('tapescope:ready').at(-1).startTime")
    marks = page.evaluate("() => Object.fromEntries(performance.getEntriesByType('mark').map(m => [m.name, Math.round(m.startTime)]))")
    print("   marks (ms after navigation):", marks)
    drawn = page.locator("[data-testid=graph] .node").count()
    played = page.evaluate(PLAY_SCRIPT, FRAMES)
    page.close()
    return {"nodes": drawn, "ready_ms": ready_ms, "step_ms": statistics.median(played["work"]),
            "frame_ms": statistics.median(played["intervals"]), "step_p95_ms": sorted(played["work"])[int(0.95 * FRAMES)]}


def main(counts):
    server, url = serve()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            for count in counts:
                result = measure(browser, url, count)
                print(f"{count:>6} nodes ({result['nodes']} drawn): navigation -> interactive graph "
                      f"{result['ready_ms'] / 1000:.2f} s; playing: median frame {result['frame_ms']:.1f} ms, "
                      f"step script median {result['step_ms']:.2f} ms (p95 {result['step_p95_ms']:.2f} ms)")
            browser.close()
    finally:
        server.shutdown()


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or [1000, 5000])
