"""schema_version 2: presets and checkpointed runs validate, unpack(pack(d)) is d field by field, and a version 1
document (tests/trace/fixtures/*.v1.json, written by the builder as it was before version 2, measure=False, deadline_s=60)
upgrades to the version 2 document the builder makes today."""
import json
import re
from pathlib import Path

import pytest

from backend.driver import trace_spec
from backend.models import presets
from backend.trace import SCHEMA_VERSION, upgrade
from backend.trace.memory_kinds import MEMORY_KIND_NAMES
from backend.trace.document_versions import DocumentVersionError, pack, step_count, unpack
from tests.close import differences
from tests.schemas import assert_matches_schema

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "trace.schema.json").read_text())
EXPANDED_SCHEMA = json.loads((ROOT / "docs" / "trace.v1.schema.json").read_text())
FIXTURES = sorted((Path(__file__).parent / "fixtures").glob("*.v1.json"))
RUNS = [(preset, None) for preset in presets.PRESETS] + [("deep-mlp", {"policy": "sqrt"}),
                                                         ("transformer-tiny", {"policy": "every_k", "k": 2}),
                                                         ("residual-unit", {"policy": "selective"})]


def what_stays_the_same(document):
    """A checkpoint entry's attrs.fn is the repr of a Python function (its memory address changes every run). And
    what the engine calls a tensor no entry made (an op of a checkpoint's region run without the tape, a view of one):
    t<id> until 2026-12-05, which read as some entry's output; its op and step since (matmul@1, add@2.view1)."""
    for entry in document["tape"]:
        if "fn" in entry.get("attrs", {}):
            entry["attrs"]["fn"] = "<function>"
    unmade = {t["id"] for t in document["tensors"] if t["produced_by"] is None and (t["kind"] == "activation" or t.get("view"))}
    for tensor in document["tensors"]:
        if tensor["id"] in unmade or tensor.get("grad_of") in unmade:      # and their gradients' names, d<name>
            tensor["name"] = "<made by no entry>"
    for leaf in document["graph"]["leaves"]:
        if leaf.get("tensor") in unmade:
            leaf["name"] = "<made by no entry>"
    return _without_which_gradients(document)


def _without_which_gradients(value):
    """Verdicts say since 2026-12-05 which gradients hold a peak (': … the parameters' .grad'): a clause the stored
    ones lack, the rest of the sentence unchanged."""
    if isinstance(value, dict):
        return {key: (re.sub(r": [^;]*the parameters' \.grad;", ";", item) if key == "verdict" and isinstance(item, str)
                      else _without_which_gradients(item)) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_which_gradients(item) for item in value]
    return value


@pytest.fixture(scope="module", params=RUNS, ids=lambda run: f"{run[0]}-{(run[1] or {}).get('policy', 'plain')}")
def expanded(request):
    preset, checkpoint = request.param
    return trace_spec(presets.get(preset), checkpoint, measure=False, deadline_s=60)


def test_version_2_validates_and_unpacks_to_the_expanded_document_field_by_field(expanded):
    packed = pack(expanded)
    assert_matches_schema(packed, SCHEMA)
    assert_matches_schema(expanded, EXPANDED_SCHEMA)
    assert packed["schema_version"] == SCHEMA_VERSION == 2
    unpacked = unpack(json.loads(json.dumps(packed)))             # through JSON, as a reader gets it
    assert set(unpacked) == set(expanded)
    for key, value in expanded.items():
        if key != "schema_version":
            assert unpacked[key] == value, key
    assert step_count(packed) == step_count(expanded) == len(expanded["steps"])


def test_version_2_is_smaller_and_leaves_out_what_a_reader_derives(expanded):
    packed = pack(expanded)
    assert "graph" not in packed and "ops" in packed
    assert set(packed["ops"]) == {entry["op"] for entry in expanded["tape"]}
    assert not {"why", "backward", "family", "index"} & set(packed["tape"]["columns"])
    assert not {"op", "why", "backward", "reads"} & set(packed["sweep"]["columns"])
    assert not {"address", "nbytes"} & set(packed["tensors"]["columns"])
    assert not {"live_bytes", "index"} & set(packed["steps"]["columns"])
    assert set(packed["steps"]["columns"]["by_kind"]["columns"]) == set(MEMORY_KIND_NAMES)
    assert len(json.dumps(packed)) < len(json.dumps(expanded))      # small runs are mostly tensor values


def test_a_column_that_disagrees_with_its_derivation_is_kept():
    expanded = trace_spec(presets.get("seed-tape"), measure=False, deadline_s=60)
    expanded["tensors"][3]["address"] = "0xdead00"             # a tensor at another address than its storage's
    expanded["sweep"][0]["why"] = "told otherwise"
    expanded["graph"]["edges"].pop()                           # someone else's graph
    packed = pack(expanded)
    assert "address" in packed["tensors"]["columns"] and "why" in packed["sweep"]["columns"] and "graph" in packed
    assert unpack(packed) == {**expanded, "schema_version": 2}


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda path: path.name)
def test_a_version_1_document_upgrades_to_the_version_2_built_today(fixture):
    stored = json.loads(fixture.read_text())
    assert stored["trace"]["schema_version"] == 1
    today = pack(trace_spec(stored["spec"], stored["checkpoint"], measure=False, deadline_s=60))
    upgraded = upgrade(stored["trace"])
    assert_matches_schema(upgraded, SCHEMA)
    old, new = what_stays_the_same(unpack(upgraded)), what_stays_the_same(unpack(today))
    # every field the old document has is today's (fields added since are extra); statistics to STATISTICS_RTOL
    assert differences(old, as_far_as(old, new)) == []


def as_far_as(old, new):
    """`new` with only the keys `old` has, all the way down (fields added to the document since `old` left out)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {key: as_far_as(old[key], new[key]) if key in new else _MISSING for key in old}
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [as_far_as(a, b) for a, b in zip(old, new)]
    return new


_MISSING = object()


def test_the_current_version_passes_upgrade_as_it_is():
    today = pack(trace_spec(presets.get("seed-tape"), measure=False, deadline_s=60))
    assert upgrade(today) is today


@pytest.mark.parametrize("document", [{"schema_version": 3}, {"schema_version": "1"}, {}, [], None])
def test_a_version_this_server_cannot_read_is_named(document):
    with pytest.raises(DocumentVersionError, match="schema_version .* send a trace document with schema_version 1 or 2"):
        upgrade(document)
