"""The trace document is declared once (backend/trace/declaration.py): both schemas and the page's column list are
generated from it byte for byte, and pack / unpack write and read the columns it declares."""
import json

import pytest

from backend.driver import trace_spec
from backend.models import presets
from backend.trace import declaration, schemas
from backend.trace.document_versions import pack, unpack

RUNS = [("mixed-precision", None), ("transformer-tiny", None), ("deep-mlp", {"policy": "sqrt"})]


@pytest.mark.parametrize("path", list(schemas.generated()))
def test_each_generated_file_is_what_the_declaration_makes(path):
    committed = (schemas.ROOT / path).read_text()
    assert committed == schemas.generated()[path], f"{path} was edited by hand: edit the declaration, run make schemas"


def test_a_hand_edit_is_found_and_rewritten(tmp_path, monkeypatch):
    monkeypatch.setattr(schemas, "ROOT", tmp_path)
    for path, text in schemas.generated().items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    edited = tmp_path / schemas.PACKED_PATH
    by_hand = edited.read_text().replace('"type": "integer"', '"type": "number"', 1)
    assert by_hand != edited.read_text()
    edited.write_text(by_hand)
    assert schemas.main(["--check"]) == 1
    assert schemas.main([]) == 0 and schemas.main(["--check"]) == 0
    assert edited.read_text() == schemas.generated()[schemas.PACKED_PATH]


@pytest.fixture(scope="module", params=RUNS, ids=lambda run: f"{run[0]}-{(run[1] or {}).get('policy', 'plain')}")
def expanded(request):
    preset, checkpoint = request.param
    return trace_spec(presets.get(preset), checkpoint, measure=False, deadline_s=60)


def test_every_field_the_builder_writes_is_declared(expanded):
    declared_document = {field.name for field in declaration.DOCUMENT.fields}
    assert set(expanded) <= declared_document
    for name, record in declaration.TABLE_RECORDS.items():
        written = {key for row in expanded[name] for key in row}
        assert written <= {field.name for field in record.fields}, name
        assert {field.name for field in record.fields if field.required} <= written, name


def test_pack_writes_the_declared_columns_and_leaves_out_the_declared_derivations(expanded):
    packed = json.loads(json.dumps(pack(expanded)))
    for name, record in declaration.TABLE_RECORDS.items():
        columns = packed[name]["columns"]
        written = {key for row in expanded[name] for key in row}
        derived = {field.name for field in record.fields if field.derived}
        assert set(columns) == written - derived, name               # every derivation holds in our own runs
        for field in record.fields:
            column = columns.get(field.name)
            if column is None:
                continue
            if field.column == declaration.CODED:
                assert set(column) == {"values", "index"}, (name, field.name)
            elif field.column == declaration.NESTED:
                assert set(column) == {"columns"}, (name, field.name)
            elif field.column == declaration.SCOPED:
                assert all(i is None or isinstance(packed["scopes"][i], str) for i in column), (name, field.name)
            else:
                assert isinstance(column, list), (name, field.name)
    assert set(packed) - set(expanded) == {field.name for field in declaration.DOCUMENT.fields if field.packed_only}
    unpacked = unpack(packed)
    assert {key: value for key, value in unpacked.items() if key != "schema_version"} == \
           {key: value for key, value in expanded.items() if key != "schema_version"}


def test_the_page_decodes_by_the_declared_layout():
    """Its decoding against unpack's, in a browser, is tests/e2e/test_trace_document.py."""
    reader = (schemas.ROOT / "static" / "js" / "state" / "trace-document.js").read_text()
    assert 'from "./trace-columns.js"' in reader
    for name in ("TABLES", "PACKED_ONLY", "SCOPED", "WITH_STATISTICS", "DERIVED"):
        assert f"const {name} =" not in reader, f"trace-document.js declares its own {name}"
    for table, fields in declaration.derived_fields().items():      # each derivation read from DERIVED, none by name
        for field in fields:
            assert f".{field} =" not in reader, f"trace-document.js derives {table}' {field} by hand"


def test_the_schemas_enumerate_what_the_declaration_says():
    expanded, packed = schemas.expanded_schema(), schemas.packed_schema()
    for name, record in declaration.TABLE_RECORDS.items():
        items = expanded["properties"][name]["items"]
        assert list(items["properties"]) == [field.name for field in record.fields]
        columns = packed["properties"][name]["allOf"][1]["properties"]["columns"]
        assert columns["required"] == [field.name for field in record.fields if field.required and not field.derived]
    assert "graph" in expanded["required"] and "graph" not in packed["required"]
    assert "scopes" in packed["required"] and "scopes" not in expanded["properties"]
