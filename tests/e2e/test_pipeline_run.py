"""A pipeline-parallel run in the page: examples/torch/gpt_pipeline.py recorded on 2 gloo ranks (2 stages,
Schedule1F1B, 4 micro-batches) and dropped on the explorer. Each rank's memory chart labels its four micro-batches'
forwards where that rank ran them, the note under the ranks chart names the micro-batches in flight at its peak
(two on the first stage, one on the last), and the server accepts the run as posted ("Share this run")."""
import re

import pytest

from backend.trace.document_versions import unpack
from tests.e2e.explorer_helpers import drop, go_to_step, open_explorer, see_chart
from tests.many_ranks import record_ranks

pytestmark = pytest.mark.xdist_group("gpt-pipeline-ranks")    # one worker records the run, once

SHOWING = "r => window.tapescope.getTrace()?.rank === r && document.querySelector('.explorer').dataset.ready === 'true'"


@pytest.fixture(scope="module")
def pipeline_run(tmp_path_factory):
    path, run = record_ranks(tmp_path_factory.mktemp("pipeline"), model="gpt_pipeline.py")
    return path, [unpack(document) for document in run["ranks"]]


def micro_batch_labels(page):
    """The memory chart's labels over each micro-batch's forward, as Plotly holds them: [(text, x)]."""
    see_chart(page, "memory-chart")
    return page.evaluate("""() => document.querySelector("[data-testid=memory-chart]").layout.annotations
        .filter((a) => a.name === "micro-batch").map((a) => [a.text, a.x])""")


def forward_middles(document):
    """Where each micro-batch's forward run sits on the step axis: [(label, middle step)]."""
    runs = []
    for step in document["steps"]:
        if step["phase"] != "forward" or step.get("micro_batch") is None:
            continue
        if runs and runs[-1][0] == step["micro_batch"] and runs[-1][2] == step["index"] - 1:
            runs[-1][2] = step["index"]
        else:
            runs.append([step["micro_batch"], step["index"], step["index"]])
    return [[f"forward {mb}", (first + last) / 2] for mb, first, last in runs]


def test_each_rank_shows_its_micro_batches_and_what_it_holds_in_flight(page, live_server, pipeline_run):
    path, documents = pipeline_run
    open_explorer(page, live_server, "seed-tape")
    drop(page, path)
    for rank, document in enumerate(documents):
        if rank:
            at = documents[0]["steps"][-1]["index"] // 2                      # a backward step of the first stage
            go_to_step(page, at)
            page.select_option("[data-testid=rank-select]", str(rank))
        page.wait_for_function(SHOWING, arg=rank)
        if rank:   # the same step number (clamped): the stages run other ops there, none of the first stage's
            assert page.evaluate("window.tapescope.getStep()") == min(at, len(document["steps"]) - 1)
        labels = micro_batch_labels(page)
        assert labels == forward_middles(document)
        assert [text for text, _ in labels] == ["forward 1", "forward 2", "forward 3", "forward 4"]
        note = page.text_content("[data-testid=ranks-note]")
        flight = r"micro-batches \d and \d in flight" if rank == 0 else r"micro-batch \d in flight"
        assert re.search(flight, note), note
    # the first stage runs two forwards before its first backward; the last alternates from the start
    first, last = (forward_middles(d) for d in documents)
    assert first[1][1] - first[0][1] < last[1][1] - last[0][1]


def test_the_server_accepts_the_run_as_posted(page, live_server, pipeline_run):
    path, _ = pipeline_run
    open_explorer(page, live_server, "seed-tape")
    response = page.request.post(f"{live_server}/api/traces", data=path.read_text(),
                                 headers={"Content-Type": "application/json", "Origin": live_server})
    assert response.ok, response.text()
    assert response.json()["id"]
