"""A run of many ranks in the page: a real 2-rank FSDP2 run.json (examples/torch/gpt_fsdp.py on 2 gloo ranks,
recorded once for the suite) opened, rank 0 shown; the rank selector turns every figure to that rank's own document
and the address keeps it; the ranks chart draws both ranks' peaks by kind and a click on a bar selects that rank;
a collective entry says what it moves and what it overlaps; "Share this run" posts it and /s/<id> opens it with
the selector."""
import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from backend.trace.document_versions import unpack
from tests.e2e.explorer_helpers import drop, go_to_step, live_bytes, open_explorer, unfold_all
from tests.many_ranks import FSDP_RANKS_GROUP

READY = "() => document.querySelector('.explorer').dataset.ready === 'true'"
SHOWING = "r => window.tapescope.getTrace()?.rank === r && document.querySelector('.explorer').dataset.ready === 'true'"


pytestmark = pytest.mark.xdist_group(FSDP_RANKS_GROUP)


@pytest.fixture(scope="module")
def ranks_run(fsdp_ranks_run):
    """(path of run.json, [rank 0's document, rank 1's], as the page decodes them)."""
    path, run = fsdp_ranks_run
    return path, [unpack(document) for document in run["ranks"]]


def open_run(page, live_server, path, size=(1280, 800)):
    open_explorer(page, live_server, "seed-tape", size=size)
    drop(page, path)
    page.wait_for_function(SHOWING, arg=0)


def figures(page):
    """What the page shows of the rank on screen: peak and live bytes, the last step, the step count in the status."""
    return {
        "peak": int(page.get_attribute("[data-testid=peak-bytes]", "data-bytes")),
        "peak_step": int(page.get_attribute("[data-testid=peak-bytes]", "data-step")),
        "live": live_bytes(page),
        "last_step": int(page.get_attribute("[data-testid=scrub]", "max")),
        "status": page.text_content("#status"),
        "verdict": page.text_content("[data-testid=peak-verdict]"),
        "memory_cursor": int(page.get_attribute("[data-testid=memory-chart] + .chart-cursor", "data-bytes") or -1),
    }


def expected(document, step):
    summary = document["summary"]
    return {"peak": summary["peak_bytes"], "peak_step": summary["peak_step"], "live": document["steps"][step]["live_bytes"],
            "last_step": len(document["steps"]) - 1}


def ranks_chart(page):
    """The ranks chart as Plotly holds it: {kind: [bytes of rank 0, of rank 1, ...]} and the outlined ranks."""
    return page.evaluate("""() => {
        const gd = document.querySelector("[data-testid=ranks-chart]");
        return { x: gd.data[0].x, kinds: Object.fromEntries(gd.data.map((t) => [t.name, t.y])),
                 outlined: gd.data[0].marker.line.width.map((w, rank) => [rank, w]).filter(([, w]) => w > 0).map(([r]) => r) };
    }""")


def test_the_rank_selector_turns_every_figure_to_that_ranks_document(page, live_server, ranks_run):
    path, documents = ranks_run
    open_run(page, live_server, path)
    select = page.get_by_test_id("rank-select")
    expect(select).to_be_visible()
    options = select.locator("option").all_text_contents()
    assert [option.split(" · ")[0] for option in options] == ["rank 0 of 2", "rank 1 of 2"]
    assert select.input_value() == "0"

    for rank in (0, 1, 0):
        if rank != int(select.input_value()):
            select.select_option(str(rank))
            page.wait_for_function(SHOWING, arg=rank)
        document = documents[rank]
        step = document["summary"]["peak_step"]
        go_to_step(page, step)
        page.wait_for_function("s => document.querySelector('[data-testid=memory-chart] + .chart-cursor')?.dataset.step"
                               " === String(s)", arg=step)
        shown = figures(page)
        assert {key: shown[key] for key in ("peak", "peak_step", "live", "last_step")} == expected(document, step)
        assert shown["memory_cursor"] == document["steps"][step]["live_bytes"]
        assert f"{len(document['tape'])} tape entries · {len(document['steps'])} steps" in shown["status"]
        assert document["summary"]["peak_sharding"][1:] in shown["verdict"]        # "rank N peaks in ..."
        assert f"rank {rank} peaks" in shown["verdict"].lower()
        assert page.evaluate("window.tapescope.getTrace().rank") == rank
        # The address keeps the rank and the step: a copied link opens this rank here.
        page.wait_for_function("([r, s]) => window.location.hash.startsWith(`#rank=${r}&step=${s}`)", arg=[rank, step])
        # The lifetimes chart and the graph are this rank's: its saved tensors and its tape.
        assert page.evaluate("document.querySelectorAll('[data-testid=graph] .node').length") > 0
        expect(page.get_by_test_id("ranks-note")).to_contain_text(f"the page shows rank {rank}")
        assert ranks_chart(page)["outlined"] == [rank]


def test_the_ranks_chart_shows_every_ranks_peak_by_kind_and_a_click_selects_a_rank(page, live_server, ranks_run):
    path, documents = ranks_run
    open_run(page, live_server, path)
    page.wait_for_function("() => document.querySelector('[data-testid=ranks-chart]')?.data?.length > 0")
    chart = ranks_chart(page)
    assert chart["x"] == ["rank 0", "rank 1"]
    for rank, document in enumerate(documents):
        stacked = {kind: values[rank] for kind, values in chart["kinds"].items()}
        assert sum(stacked.values()) == document["summary"]["peak_bytes"]
        assert stacked == {kind: document["summary"]["by_kind_at_peak"].get(kind, 0) for kind in stacked}
    assert chart["outlined"] == [0]

    # A click on rank 1's bar (its largest part) shows rank 1 everywhere.
    bar = page.get_by_test_id("ranks-chart").locator(".barlayer .trace").nth(3).locator("path").nth(1)
    bar.scroll_into_view_if_needed()
    box = bar.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_function(SHOWING, arg=1)
    expect(page.get_by_test_id("rank-select")).to_have_value("1")
    page.wait_for_function("() => document.querySelector('[data-testid=ranks-chart]').dataset.rank === '1'")
    assert ranks_chart(page)["outlined"] == [1]


def test_a_collective_entry_says_what_it_moves_and_what_it_overlaps(page, live_server, ranks_run):
    path, documents = ranks_run
    open_run(page, live_server, path)
    document = documents[0]
    collectives = [entry for entry in document["tape"] if entry["family"] == "collective"]
    assert collectives, "an FSDP2 step all-gathers its parameters"
    expect(page.locator(".legend-collective")).to_be_visible()
    unfold_all(page)                   # every collective a node of its own family: black, square
    drawn = page.locator("[data-testid=graph] .node.op.fam-collective")
    assert drawn.count() == len(collectives)
    assert drawn.first.locator("rect").get_attribute("fill").lower() == "#000000"
    assert drawn.first.locator("rect").get_attribute("rx") == "0"

    entry = collectives[0]
    moves = entry["collective"]
    page.evaluate("id => window.tapescope.select(id)", f"e{entry['index']}")
    block = page.locator("#inspector [data-testid=collective]")
    expect(block).to_be_visible()
    assert block.get_attribute("data-op") == moves["op"]
    assert int(block.get_attribute("data-bytes-in")) == moves["bytes_in"]
    assert int(block.get_attribute("data-bytes-out")) == moves["bytes_out"]
    expect(block).to_contain_text(f"ranks {', '.join(map(str, moves['group']))}")
    expect(block).to_contain_text(f"{moves['bytes_in']:,} B")

    # At its step the sweep panel says the same, and what ran while it was in flight (or that nothing could).
    step = next(s["index"] for s in document["steps"] if s["entry"] == entry["index"])
    go_to_step(page, step)
    sweep = page.locator("[data-testid=sweep] [data-testid=collective]")
    expect(sweep).to_be_visible()
    expect(sweep.get_by_test_id("collective-moves")).to_contain_text(f"{moves['op']} over ranks")
    expect(sweep).to_contain_text("overlaps")
    asynchronous = [e for e in collectives if e["collective"]["event"] == "issued"]
    if asynchronous:
        issued = asynchronous[0]
        step = next(s["index"] for s in document["steps"] if s["entry"] == issued["index"])
        go_to_step(page, step)
        expect(sweep).to_contain_text("while it was in flight")


def test_share_this_run_posts_every_rank_and_its_link_opens_with_the_selector(page, live_server, ranks_run):
    path, documents = ranks_run
    open_run(page, live_server, path)
    page.get_by_test_id("rank-select").select_option("1")
    page.wait_for_function(SHOWING, arg=1)
    page.get_by_test_id("share-run").click()
    link = page.get_by_test_id("share-link")
    expect(link).to_be_visible(timeout=30_000)
    assert "#rank=1&step=" in page.get_by_test_id("share-step-link").get_attribute("href")
    url = link.get_attribute("href")
    stored = page.request.get(url.replace("/s/", "/api/snapshots/")).json()
    assert [rank["rank"] for rank in stored["trace"]["ranks"]] == [0, 1]

    page.goto(url)
    page.wait_for_function(SHOWING, arg=0)
    expect(page.get_by_test_id("rank-select")).to_be_visible()
    assert figures(page)["peak"] == documents[0]["summary"]["peak_bytes"]
    page.get_by_test_id("rank-select").select_option("1")
    page.wait_for_function(SHOWING, arg=1)
    assert figures(page)["peak"] == documents[1]["summary"]["peak_bytes"]

    # The link to this step of rank 1 opens rank 1 at that step.
    step = documents[1]["summary"]["peak_step"]
    page.goto("about:blank")                  # a new page load, not a change of the hash
    page.goto(f"{url}#rank=1&step={step}")
    page.wait_for_function(SHOWING, arg=1)
    page.wait_for_function("s => window.tapescope.getStep() === s", arg=step)
    assert live_bytes(page) == documents[1]["steps"][step]["live_bytes"]


def test_a_run_of_many_ranks_has_no_serious_accessibility_violations(page, live_server, ranks_run):
    from tests.e2e.test_accessibility import serious_violations
    path, _ = ranks_run
    open_run(page, live_server, path)
    page.wait_for_function("() => document.querySelector('[data-testid=ranks-chart]')?.data?.length > 0")
    assert serious_violations(page) == []


def test_a_reload_reopens_the_rank_the_address_names(page, live_server, ranks_run):
    path, documents = ranks_run
    open_run(page, live_server, path)
    page.get_by_test_id("rank-select").select_option("1")
    page.wait_for_function(SHOWING, arg=1)
    page.wait_for_function("() => window.location.hash.startsWith('#rank=1&')")
    page.reload()                             # the run kept in this browser opens again, at the address's rank
    page.wait_for_function(SHOWING, arg=1)
    expect(page.get_by_test_id("rank-select")).to_have_value("1")
    assert figures(page)["peak"] == documents[1]["summary"]["peak_bytes"]


def test_a_run_file_with_a_broken_rank_is_refused_naming_the_rank(page, live_server, ranks_run, tmp_path):
    path, _ = ranks_run
    run = json.loads(Path(path).read_text())
    del run["ranks"][1]["steps"]
    broken = tmp_path / "broken-run.json"
    broken.write_text(json.dumps(run))
    open_explorer(page, live_server, "seed-tape")
    drop(page, broken)
    expect(page.get_by_test_id("open-run-error")).to_contain_text("rank 1's document: it has no steps")
    assert page.evaluate("window.tapescope.getTrace().spec.name") == "seed-tape"     # the workspace stays
