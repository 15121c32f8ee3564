"""The posted-document checker agrees with the document builder: every preset's own document, with and without a
checkpoint schedule, passes load_posted_document unchanged (no false refusals), and the checker's live bytes are
the builder's."""
import json

import pytest

from backend.driver import trace_spec
from backend.models import presets
from backend.trace.intake import PostedDocumentError, load_posted_document

# Checkpoint plans are refused (400) for seed-tape (no blocks) and version-error (its backward stops): those post
# only their plain document.
UNPLANNABLE = {"seed-tape", "version-error"}
CASES = [(p["id"], checkpoint) for p in presets.listing() for checkpoint in (None, {"policy": "sqrt"})
         if not (checkpoint and p["id"] in UNPLANNABLE)]


@pytest.mark.parametrize("preset,checkpoint", CASES)
def test_every_presets_document_passes_as_posted(preset, checkpoint):
    document = json.loads(json.dumps(trace_spec(presets.get(preset), checkpoint, wait_s=120.0, deadline_s=120.0)))
    assert load_posted_document(document) is document


def test_a_storage_moved_by_one_step_breaks_the_series_where_it_moved():
    document = json.loads(json.dumps(trace_spec(presets.get("lab1-mlp"))))
    storage = next(s for s in document["storages"] if s["kind"] == "activation" and s["freed"] is not None)
    storage["freed"] -= 1
    for tensor in document["tensors"]:
        if tensor["storage"] == storage["id"]:
            tensor["freed"] = storage["freed"]
    with pytest.raises(PostedDocumentError) as refused:
        load_posted_document(document)
    paths = {p["path"] for p in refused.value.problems}
    assert f"steps[{storage['freed'] + 1}].live_bytes" in paths
    assert f"steps[{storage['freed'] + 1}].by_kind.activation" in paths


def test_the_schema_caps_a_table_at_the_largest_count_cap():
    """docs/trace.schema.json's table maximum and column lengths are intake.SCHEMA_MAX_ROWS: one table of caps."""
    from backend.trace import intake
    schema = json.loads((intake.DOCS / "trace.schema.json").read_text())
    table, column = schema["$defs"]["table"], schema["$defs"]["column"]["oneOf"]
    assert table["properties"]["count"]["maximum"] == intake.SCHEMA_MAX_ROWS
    assert column[0]["maxItems"] == column[1]["properties"]["index"]["maxItems"] == intake.SCHEMA_MAX_ROWS
