"""Benchmark: what reading a trace costs the page, schema_version 1 against 2, with and without gzip, in Chromium.

Traces issue 15's spec (bench/scale.py) at about 1k, 5k and 20k tape entries (bench/wire_bytes.py's sizes), plain,
and with --sqrt also {"policy": "sqrt"} (the work cap lifted), and hands the page each form of the same run: v1 and
v2 as JSON text, and each gzip-compressed at the server's level (backend/api/compression.py). In the page it times,
median of a few rounds after one that warms up, the forms interleaved: inflating the gzip bytes (a
DecompressionStream to text: the work the browser's network stack does before the page sees the text), JSON.parse,
and for v2 static/js/state/trace-document.js's readTrace (v1 needs no decoding); it checks the decoded records equal
v1's. Prints a Markdown table: entries, form, bytes on the wire, inflate, parse and decode ms.
Run: .venv/bin/python bench/decode.py [--sqrt] [inner repeat count ...] (default 2 10 39: ~1k, ~5k, ~20k entries)
"""
import argparse
import gzip
import json
import statistics
import sys
from pathlib import Path
from urllib.parse import unquote

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import sync_playwright  # noqa: E402

import backend.driver as driver  # noqa: E402
from backend.api.compression import GZIP_LEVEL  # noqa: E402
from backend.driver import work  # noqa: E402
from bench.browser import ROOT, serve  # noqa: E402
from bench.scale import issue_spec  # noqa: E402
from bench.wire_bytes import SIZES  # noqa: E402
from backend.trace.document_versions import pack  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

ROUNDS = 5
FORMS = ("v1", "v1 + gzip", "v2", "v2 + gzip")
READ_SCRIPT = """async ([forms, rounds]) => {
  const { readTrace } = await import('/static/js/state/trace-document.js');
  const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const bytes = {}, times = {};
  for (const form of forms) {
    bytes[form] = await (await fetch(`/bench/${encodeURIComponent(form)}`)).arrayBuffer();
    times[form] = { inflate: [], parse: [], decode: [] };
  }
  let plain = null, expanded = null;
  for (let round = 0; round <= rounds; round += 1) {      // round 0 warms every path up and is not counted
    for (const form of forms) {                          // forms interleaved: a busy moment hits them alike
      const counted = round > 0 ? times[form] : { inflate: [], parse: [], decode: [] };
      let started = performance.now();
      const text = form.endsWith("gzip")
        ? await new Response(new Blob([bytes[form]]).stream().pipeThrough(new DecompressionStream("gzip"))).text()
        : new TextDecoder().decode(bytes[form]);
      if (form.endsWith("gzip")) counted.inflate.push(performance.now() - started);
      started = performance.now();
      const parsed = JSON.parse(text);
      counted.parse.push(performance.now() - started);
      if (form.startsWith("v2")) {
        started = performance.now();
        expanded = readTrace(parsed);
        counted.decode.push(performance.now() - started);
      } else {
        plain = parsed;
      }
    }
  }
  const timings = Object.fromEntries(forms.map((form) => [form, Object.fromEntries(Object.entries(times[form]).map(
    ([step, values]) => [step, values.length ? median(values) : null]))]));
  const sorted = (key, value) => (value && typeof value === "object" && !Array.isArray(value)
    ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1))) : value);
  const same = ["tensors", "storages", "tape", "sweep", "steps", "graph", "summary"].every(
    (key) => JSON.stringify(expanded[key], sorted) === JSON.stringify(plain[key], sorted));
  return { timings, same };
}"""


def answering(forms):
    """A route serving /bench/<form> with that form's bytes."""
    return lambda route: route.fulfill(status=200, content_type="application/octet-stream",
                                       body=forms[unquote(route.request.url.rsplit("/", 1)[1])])


def wire_forms(expanded):
    """{form: the bytes the page is sent}: each version's compact JSON, and that gzip-compressed as the server does."""
    texts = {"v1": json.dumps(expanded, separators=(",", ":")).encode(),
             "v2": json.dumps(pack(expanded), separators=(",", ":")).encode()}
    return {**texts, **{f"{name} + gzip": gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)
                        for name, data in texts.items()}}


def milliseconds(value):
    return "–" if value is None else f"{value:,.0f}"


def main(inners, policies):
    work.WORK_BUDGET_US = 10 ** 15
    driver.DEADLINE_S = 10 ** 6
    server, url = serve(ROOT)      # the app of this checkout, in its own process
    print("| entries | checkpoint | form | on the wire | inflate ms | parse ms | decode ms | parse + decode ms |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for policy in policies:
                for inner in inners:
                    expanded = driver.trace_spec(issue_spec(inner), {"policy": policy} if policy else None,
                                                 measure=False)
                    forms = wire_forms(expanded)
                    page = browser.new_page()
                    page.route("**/bench/*", answering(forms))
                    page.goto(url + "static/js/state/trace-document.js")      # any page of the server: same origin
                    result = page.evaluate(READ_SCRIPT, [list(FORMS), ROUNDS])
                    page.close()
                    for name in FORMS:
                        timing = result["timings"][name]
                        total = timing["parse"] + (timing["decode"] or 0)
                        print(f"| {len(expanded['tape']):,} | {policy or 'none'} | {name} | "
                              f"{len(forms[name]) / 1e6:.2f} MB | {milliseconds(timing['inflate'])} | "
                              f"{milliseconds(timing['parse'])} | {milliseconds(timing['decode'])} | "
                              f"{milliseconds(total)} |", flush=True)
                    if not result["same"]:
                        print(f"decoded v2 records differ from v1's at {len(expanded['tape']):,} entries", flush=True)
            browser.close()
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inner", type=int, nargs="*", default=list(SIZES.values()),
                        help="bench/scale.py's inner repeat count (2, 10, 39: ~1k, ~5k, ~20k entries)")
    parser.add_argument("--sqrt", action="store_true", help="also the runs checkpointed with policy sqrt")
    arguments = parser.parse_args()
    main(arguments.inner, (None, "sqrt") if arguments.sqrt else (None,))
