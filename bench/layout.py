"""Benchmark: graph layouts in headless Chromium, with our ranks and order (network-simplex.js, crossing-order.js)
against dagre's own network simplex and crossing reduction: the same layouts (tests/e2e/test_layout_as_dagre.py).

The layouts are the ones the page asks for on the largest graph the presets make: grad-accumulation unfolded, under
every_k=1 (~400 boxes in 54 groups), captured as the page sends them (tests/e2e/test_layout_as_dagre.py's capture).
Each is laid out --repeat times each way, alternating, in the same page; the medians of the whole set and
their ratio are printed (this machine is shared: the ratio, measured in one run, is the figure to read).

Run: .venv/bin/python bench/layout.py [--repeat N]
"""
import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from app import create_app  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.e2e.explorer_helpers import choose, open_explorer, unfold_all  # noqa: E402
from tests.e2e.test_layout_as_dagre import CAPTURE  # noqa: E402
from tests.live import serving  # noqa: E402

TIME_BOTH = """repeat => {
  const inputs = window.__layoutInputs.splice(0).filter((l) => l.boxes.length <= window.tapescopeLayout.turnsMaxBoxes);
  const ours = [window.tapescopeNetworkSimplex, window.tapescopeCrossingOrder];
  const times = { ours: [], dagre: [] };
  for (let r = 0; r < repeat; r += 1) {
    for (const which of ["ours", "dagre"]) {
      [window.tapescopeNetworkSimplex, window.tapescopeCrossingOrder] = which === "ours" ? ours : [undefined, undefined];
      const start = performance.now();
      for (const { boxes, edges, clusters, rankdir } of inputs) window.tapescopeLayout(boxes, edges, clusters, rankdir);
      times[which].push(performance.now() - start);
    }
  }
  [window.tapescopeNetworkSimplex, window.tapescopeCrossingOrder] = ours;
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return { layouts: inputs.length, boxes: Math.max(...inputs.map((l) => l.boxes.length)),
           ours: median(times.ours), dagre: median(times.dagre) };
}"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="layouts of the whole set per ranker (default 5)")
    args = parser.parse_args(argv)
    folder = tempfile.mkdtemp()
    app = create_app({"TESTING": True, "DATABASE_URL": f"sqlite:///{folder}/bench.sqlite"})
    with serving(app) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.add_init_script(CAPTURE)
        open_explorer(page, url, "grad-accumulation")
        unfold_all(page)
        choose(page, "every_k", k=1)
        found = page.evaluate(TIME_BOTH, args.repeat)
        browser.close()
    print(f"load average (1 / 5 / 15 min): {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{found['layouts']} layouts (largest {found['boxes']} boxes), median of {args.repeat}: "
          f"ours {found['ours']:.0f} ms, dagre's {found['dagre']:.0f} ms, "
          f"ratio {found['ours'] / found['dagre']:.2f}")


if __name__ == "__main__":
    main()
