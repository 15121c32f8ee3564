"""A real PyTorch run in the page, as a person opens one: the small GPT's run.json dropped on the page (or picked)
opens read-only with its source in the header, nothing uploaded; step to its peak, fold a block, read the peak
explanation; "Share this run" posts it once and its link opens the same run."""
import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.explorer_helpers import drop, go_to_step, live_bytes, open_explorer, presets

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install -r requirements-torch.txt)")

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
OPENED = "() => window.tapescope.getTrace()?.source && document.querySelector('.explorer').dataset.ready === 'true'"


@pytest.fixture(scope="module")
def gpt_run(tmp_path_factory):
    """examples/torch/gpt.py's step, recorded as the command line writes it: (path of run.json, document)."""
    from backend.importers.torch_step import load_build, record_step, unpack_build
    document = record_step(*unpack_build(load_build(ROOT / "examples" / "torch" / "gpt.py")()))
    path = tmp_path_factory.mktemp("gpt") / "run.json"
    path.write_text(json.dumps(document, separators=(",", ":")))
    return path, json.loads(path.read_text())


def writes(page):
    """Every POST and PUT the page makes from here on (after the preset's own schedules are in)."""
    page.wait_for_function("() => ['ready', 'recorded'].includes(document.querySelector('.explorer').dataset.schedules)")
    sent = []
    # The matrix-chain lesson posts only the widths typed in its panel (never the run), so it is not counted.
    page.on("request", lambda request: sent.append(request.url)
            if request.method in ("POST", "PUT") and not request.url.endswith("/api/matrix-chain") else None)
    return sent


def open_dropped(page, live_server, path):
    """The explorer with `path` dropped on it and opened; returns the list of writes the page makes from then."""
    open_explorer(page, live_server, "seed-tape")
    sent = writes(page)
    drop(page, path)
    page.wait_for_function(OPENED)
    return sent


def test_the_small_gpt_dropped_on_the_page_opens_read_only_and_explains_its_peak(page, live_server, gpt_run):
    path, document = gpt_run
    sent = open_dropped(page, live_server, path)
    source = document["source"]
    expect(page.get_by_test_id("run-source")).to_contain_text(f"{source['model']} · torch {source['torch_version']}")
    expect(page.locator("#editor-panel")).to_be_hidden()               # no spec editor
    expect(page.get_by_test_id("preset")).to_be_hidden()                # no preset names it: the source does
    expect(page.get_by_test_id("model-origin")).to_be_hidden()
    expect(page.get_by_test_id("share")).to_be_hidden()
    expect(page.get_by_test_id("share-run")).to_be_visible()
    assert page.evaluate("window.tapescope.getTrace().summary.peak_bytes") == document["summary"]["peak_bytes"]

    peak = document["summary"]["peak_step"]
    go_to_step(page, peak)
    assert live_bytes(page) == document["summary"]["peak_bytes"]
    expect(page.get_by_test_id("peak-bytes")).to_have_attribute("data-bytes", str(document["summary"]["peak_bytes"]))

    # Fold a block: the module tree opens folded, and the player has opened the groups on its way to the peak;
    # unfold down to transformer.h where it has not, open block 1, fold it back.
    graph = "[data-testid=graph]"
    entry = document["steps"][peak]["entry"]
    at_peak = document["tape"][entry]["scope"] if entry is not None else ""
    if at_peak.startswith("transformer"):                      # the player opens the group the peak is in
        page.locator(f"{graph} .group-frame[data-group-id='transformer']").wait_for()
    for scope in ("transformer", "transformer.h"):
        frame = page.locator(f"{graph} .group-frame[data-group-id='{scope}']")
        if not frame.count():
            box = page.locator(f"{graph} .group-node[data-group-id='{scope}']")
            box.locator("rect").dispatch_event("click")          # a click wherever the pan has put the box
        frame.wait_for()
    block = page.locator(f"{graph} .group-node[data-group-id='transformer.h.1']")
    assert block.get_attribute("data-collapsed") == "true"
    assert "transformer.h.1" in block.locator(".label").text_content()
    folded = page.locator(f"{graph} .node").count()
    block.locator("rect").dispatch_event("click")
    frame = page.locator(f"{graph} .group-frame[data-group-id='transformer.h.1']")
    frame.wait_for()
    assert page.locator(f"{graph} .node").count() > folded
    frame.locator(".frame-label").dispatch_event("click")
    page.wait_for_function("n => document.querySelectorAll('[data-testid=graph] .node').length === n", arg=folded)

    # The peak explanation: the document's verdict, and what is alive at the peak adds up to it.
    explainer = page.get_by_test_id("peak-explainer")
    explainer.scroll_into_view_if_needed()
    expect(page.get_by_test_id("peak-verdict")).to_have_text(document["summary"]["peak"]["verdict"])
    expect(explainer).to_contain_text("this is the peak")
    parts = page.locator("[data-testid=peak-breakdown] [data-bytes]").evaluate_all("i => i.map(n => Number(n.dataset.bytes))")
    assert sum(parts) == document["summary"]["peak_bytes"]
    bar = page.locator("[data-testid=peak-breakdown] button.group[data-kind=activation]").first
    bar.click()
    selected = page.evaluate("window.tapescope.getSelected()")
    assert selected and selected.startswith("t")
    expect(page.locator("#inspector")).to_contain_text(next(t["name"] for t in document["tensors"] if f"t{t['id']}" == selected))
    expect(page.get_by_test_id("sweep")).to_contain_text(document["tape"][entry]["backward"])   # the peak's node, torch's name
    expect(page.get_by_test_id("levers-recorded")).to_be_visible()       # no spec of ours to re-run levers on

    ARTIFACTS.mkdir(exist_ok=True)
    for width, height in ((1280, 800), (1920, 1080)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(ARTIFACTS / f"import-run-{width}.png"))
    assert sent == [], f"an opened run is uploaded only by Share; the page sent {sent}"
    expect(page.get_by_test_id("modes-view")).to_have_attribute("data-state", "offline")


def test_share_this_run_posts_it_once_and_its_link_opens_the_same_run(page, live_server, gpt_run):
    path, document = gpt_run
    open_explorer(page, live_server, "seed-tape")
    page.set_input_files("[data-testid=open-run]", str(path))
    page.wait_for_function(OPENED)
    sent = writes(page)
    page.get_by_test_id("share-run").click()
    link = page.get_by_test_id("share-link")
    link.wait_for()
    assert [url.rsplit("/", 2)[-2:] for url in sent] == [["api", "traces"]]
    page.goto(link.get_attribute("href"))
    page.wait_for_function(OPENED)
    expect(page.get_by_test_id("run-source")).to_contain_text(document["source"]["model"])
    expect(page.locator("#editor-panel")).to_be_hidden()
    expect(page.get_by_test_id("make-copy")).to_be_hidden()
    assert page.evaluate("window.tapescope.getTrace().summary") == document["summary"]


def test_a_file_that_is_not_a_trace_is_refused_with_a_sentence(page, live_server, tmp_path):
    open_explorer(page, live_server, "seed-tape")
    bad = tmp_path / "notes.json"
    bad.write_text('{"hello": "world"}')
    page.set_input_files("[data-testid=open-run]", str(bad))
    expect(page.locator("#status")).to_contain_text("Could not open notes.json")
    said = page.get_by_test_id("open-run-error")                       # beside the control, in words
    expect(said).to_be_visible()
    expect(said).to_contain_text("it is not a trace document (it has no schema_version)")
    assert "undefined" not in said.inner_text()
    assert page.evaluate("window.tapescope.getTrace().source") is None
    expect(page.locator("#editor-panel")).to_be_visible()


def test_our_own_runs_json_opens_read_only_from_a_file(page, live_server, tmp_path):
    spec = presets(page, live_server)["residual-unit"]["spec"]
    reply = page.request.post(f"{live_server}/api/trace", data={"spec": spec})
    assert reply.ok, reply.text()
    path = tmp_path / "residual.json"
    path.write_text(reply.text())            # schema_version 2, as the server sends it and `python -m backend.driver` writes
    open_explorer(page, live_server, "seed-tape")
    sent = writes(page)
    page.set_input_files("[data-testid=open-run]", str(path))
    page.wait_for_function("() => window.tapescope.getTrace().spec.name === 'residual-unit'"
                           " && document.querySelector('.explorer').dataset.ready === 'true'")
    expect(page.get_by_test_id("run-source")).to_contain_text("opened from a file")
    expect(page.get_by_test_id("share-run")).to_be_visible()
    page.wait_for_timeout(800)                      # past when the schedules would have been asked for
    assert sent == []

    # a reload opens the same run again (kept in this browser), and Close run takes it back to the presets
    page.set_viewport_size({"width": 1280, "height": 800})
    page.reload()
    page.wait_for_function("() => window.tapescope?.getTrace()?.spec?.name === 'residual-unit'"
                           " && document.querySelector('.explorer').dataset.ready === 'true'")
    expect(page.get_by_test_id("run-source")).to_contain_text("opened from a file")
    expect(page.locator("#status")).to_contain_text("reopened residual.json")
    back = page.get_by_test_id("close-run")
    expect(back).to_be_visible()
    page.screenshot(path="test-artifacts/run-file-reloaded-1280.png")
    back.click()
    page.wait_for_function("() => window.tapescope?.getTrace()?.spec?.name === 'seed-tape'"
                           " && document.querySelector('.explorer').dataset.ready === 'true'")
    expect(page.get_by_test_id("preset")).to_be_enabled()
    expect(back).to_be_hidden()
    page.reload()                                     # closed is closed: the workspace opens, not the run
    page.wait_for_selector(".explorer[data-ready=true]")
    assert page.evaluate("window.tapescope.getTrace().spec.name") == "seed-tape"


@pytest.fixture(scope="module")
def gpt_what_if(tmp_path_factory):
    """The small GPT with `--checkpoint every_k=1`, as the command line writes it (schema_version 2)."""
    from backend.importers.torch_step import load_build
    from backend.importers.torch_checkpoint import checkpoint_what_ifs
    from backend.trace.document_versions import pack
    document = checkpoint_what_ifs(load_build(ROOT / "examples" / "torch" / "gpt.py"), "every_k=1")
    path = tmp_path_factory.mktemp("gpt-checkpoint") / "run.json"
    path.write_text(json.dumps(pack(document), separators=(",", ":")))
    return path, document


def test_a_dropped_checkpoint_what_if_shows_torchs_measured_and_our_predicted_peaks(page, live_server, gpt_what_if):
    path, document = gpt_what_if
    sent = open_dropped(page, live_server, path)
    expect(page.locator(".explorer")).to_have_attribute("data-schedules", "ready")
    panel = page.locator("#schedules")
    panel.scroll_into_view_if_needed()
    torch_version = document["source"]["torch_version"]
    expect(panel.locator(".schedule-table thead")).to_contain_text(f"Peak (torch {torch_version})")
    expect(panel.locator(".schedule-table thead")).to_contain_text("Predicted")
    rows = panel.locator(".schedule-table tbody tr:not(.schedule-why)")
    expect(rows).to_have_count(2)
    for row, schedule in zip((rows.nth(0), rows.nth(1)), document["schedules"]):
        expect(row.get_by_test_id("schedule-option")).to_have_attribute("data-policy", schedule["policy"])
        measured = row.locator("td").nth(1).locator("[data-bytes]")
        expect(measured).to_have_attribute("data-bytes", str(schedule["executed_peak_bytes"]))
        predicted = row.get_by_test_id("schedule-predicted")
        expect(predicted).to_have_attribute("data-bytes", str(schedule["predicted_peak_bytes"]))
        assert abs(float(predicted.get_attribute("data-error"))) <= 0.02
        expect(predicted).to_contain_text("%")
    expect(panel.get_by_test_id("pareto-chart")).to_have_attribute("data-points", "2")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "import-checkpoint-1280.png"))
    assert sent == []
