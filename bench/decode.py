"""Benchmark: what reading a trace costs the page, schema_version 1 against 2, in headless Chromium.

Traces issue 15's spec (bench/scale.py) at about 20,000 tape entries, plain and with {"policy": "sqrt"} (the
work cap lifted), and hands the page both forms of the same run as text. In the page it times JSON.parse of
the v1 text (what reading a trace cost before: v1 needed no decoding) against JSON.parse of the v2 text plus
static/js/state/trace-document.js's readTrace, median of a few rounds, and checks the decoded records equal v1's.
Run: .venv/bin/python bench/decode.py [inner repeat count, default 39 = ~20,000 entries]
"""
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import sync_playwright  # noqa: E402

import backend.driver as driver  # noqa: E402
from backend.driver import work  # noqa: E402
from bench.browser import serve  # noqa: E402
from bench.scale import issue_spec  # noqa: E402
from backend.trace.document_versions import pack  # noqa: E402
from tests.conftest import CHROMIUM_ARGS  # noqa: E402

ROUNDS = 5
READ_SCRIPT = """async ([rounds]) => {
  const { readTrace } = await import('/static/js/state/trace-document.js');
  const v1Text = await (await fetch('/bench/v1.json')).text();
  const v2Text = await (await fetch('/bench/v2.json')).text();
  const v1 = [], parse2 = [], decode2 = [];
  let expanded = null, plain = null;
  for (let i = 0; i < rounds; i += 1) {
    let started = performance.now();
    plain = JSON.parse(v1Text);
    v1.push(performance.now() - started);
    started = performance.now();
    const packed = JSON.parse(v2Text);
    parse2.push(performance.now() - started);
    started = performance.now();
    expanded = readTrace(packed);
    decode2.push(performance.now() - started);
  }
  const sorted = (key, value) => (value && typeof value === "object" && !Array.isArray(value)
    ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1))) : value);
  const same = ["tensors", "storages", "tape", "sweep", "steps", "graph", "summary"].every(
    (key) => JSON.stringify(expanded[key], sorted) === JSON.stringify(plain[key], sorted));
  return { v1, parse2, decode2, same };
}"""


def answering(body):
    return lambda route: route.fulfill(status=200, content_type="application/json", body=body)


def main(inner=39):
    work.WORK_BUDGET_US = 10 ** 15
    driver.DEADLINE_S = 10 ** 6
    server, url = serve()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            for policy in (None, "sqrt"):
                expanded = driver.trace_spec(issue_spec(inner), {"policy": policy} if policy else None, measure=False)
                texts = {"v1": json.dumps(expanded, separators=(",", ":")),
                         "v2": json.dumps(pack(expanded), separators=(",", ":"))}
                page = browser.new_page()
                for name, text in texts.items():
                    page.route(f"**/bench/{name}.json", answering(text))
                page.goto(url + "static/js/state/trace-document.js")          # any page of the server: same origin
                timings = page.evaluate(READ_SCRIPT, [ROUNDS])
                page.close()
                v1_ms = statistics.median(timings["v1"])
                parse_ms, decode_ms = statistics.median(timings["parse2"]), statistics.median(timings["decode2"])
                entries = len(expanded["tape"])
                print(f"{entries:,} entries, {policy or 'no checkpoint'}: v1 {len(texts['v1']) / 1e6:.1f} MB parsed in "
                      f"{v1_ms:.0f} ms; v2 {len(texts['v2']) / 1e6:.1f} MB parsed in {parse_ms:.0f} ms + decoded in "
                      f"{decode_ms:.0f} ms = {parse_ms + decode_ms:.0f} ms ({(parse_ms + decode_ms) / v1_ms:.2f}x v1); "
                      f"decoded records equal v1's: {timings['same']}")
            browser.close()
    finally:
        server.shutdown()


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:2]))
