"""A run recorded on fake tensors in the page (--fake --world-size 8: shapes and bytes, no values): the Llama
example at a small size opens read-only, says what it is, shows the document's peak, and every step with a node
selected draws without a script error (a fake run's adjoints have no norm: the sweep panel once threw on it)."""
import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.explorer_helpers import open_explorer

torch = pytest.importorskip("torch", reason="torch is an optional extra (pip install -r requirements-torch.txt)")

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"LAYERS": 2, "WIDTH": 128, "HEADS": 4, "HIDDEN": 344, "VOCAB": 500, "SEQ": 32}
OPENED = "() => window.tapescope.getTrace()?.source?.fake && document.querySelector('.explorer').dataset.ready === 'true'"


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
    from backend.importers.torch import main
    with pytest.MonkeyPatch.context() as env:
        for name, value in SMALL.items():
            env.setenv(f"TAPESCOPE_LLAMA_{name}", str(value))
        path = tmp_path_factory.mktemp("fake") / "run.json"
        assert main([str(ROOT / "examples" / "torch" / "llama7b_fsdp.py"), "--fake", "--world-size", "8",
                     "--warmup", "1", "--out", str(path)]) == 0
    return path


def test_a_fake_run_opens_says_what_it_is_and_steps_without_errors(page, live_server, fake_run):
    from backend.trace.document_versions import unpack
    document = unpack(json.loads(fake_run.read_text()))
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    open_explorer(page, live_server, "seed-tape")
    page.set_input_files("[data-testid=open-run]", str(fake_run))
    page.wait_for_function(OPENED)
    expect(page.get_by_test_id("run-source")).to_contain_text("on fake tensors (shapes and bytes, no values), "
                                                              "rank 0 of 8 fake ranks")
    expect(page.get_by_test_id("peak-bytes")).to_have_attribute("data-bytes", str(document["summary"]["peak_bytes"]))
    picks = [node["id"] for node in document["graph"]["nodes"][::40]] + [document["graph"]["leaves"][0]["id"]]
    page.evaluate("""picks => {
        const last = window.tapescope.getTrace().steps.length - 1;
        for (const id of [null, ...picks]) {
          window.tapescope.select(id);
          for (let s = 0; s <= last; s += id === null ? 1 : 9) window.tapescope.setStep(s);
        }
        window.tapescope.select(null);
      }""", picks)
    backward = next(item["step"] for item in document["sweep"])
    page.evaluate("s => window.tapescope.setStep(s)", backward)
    expect(page.get_by_test_id("sweep")).to_contain_text("recorded without values")
    assert errors == []
