"""The files generated from the trace document's declaration (backend/trace/declaration.py): both JSON Schemas and the
page's column list. `python -m backend.trace.schemas` writes them (`make schemas`); `--check` only says which differ.

The expanded form writes each table as a list of records; the packed form (schema_version 2) as {count, columns,
optional, sparse}, where a column's values are checked for shape ($defs column: a list, coded or nested) and the
expanded records after unpacking (backend/trace/intake.py validates a posted document against both).
"""
import json
import sys
from pathlib import Path

from backend.trace import declaration as declared
from backend.trace.declaration import DOCUMENT, RUN, columns_of
from backend.trace.declaration_types import COLUMN_WORDS, DERIVATIONS, NESTED, PLAIN, Named, Record, Table, Version
from backend.trace.intake import SCHEMA_MAX_ROWS

ROOT = Path(__file__).resolve().parents[2]
EXPANDED_PATH, PACKED_PATH = "docs/trace.v1.schema.json", "docs/trace.schema.json"
RUN_PATH = "docs/trace-run.schema.json"
PAGE_COLUMNS_PATH = "static/js/state/trace-columns.js"
GENERATED_NOTE = ("Generated from backend/trace/declaration.py by `python -m backend.trace.schemas` (make schemas): "
                  "edit the declaration, not this file.")


class _Form:
    """One form's rendering: the version it says, whether tables are columns, and the named types it used."""

    def __init__(self, version, packed):
        self.version, self.packed, self.defs = version, packed, {}

    def type(self, node):
        if isinstance(node, Named):
            if node.name not in self.defs:
                self.defs[node.name] = None                   # taken before rendering: a named type may name others
                self.defs[node.name] = self.type(node.type)
            return {"$ref": f"#/$defs/{node.name}"}
        if isinstance(node, Version):
            return {"const": self.version}
        if isinstance(node, Record):
            return self.record(node)
        if isinstance(node, Table):
            return self.table(node.record) if self.packed else {"type": "array", "items": self.record(node.record)}
        if isinstance(node, dict):
            return {key: self.type(value) for key, value in node.items()}
        if isinstance(node, (list, tuple)):
            return [self.type(value) for value in node]
        return node

    def fields_of(self, record):
        return [field for field in record.fields if self.packed or not field.packed_only]

    def record(self, record):
        fields = self.fields_of(record)
        schema = {"type": ["object", "null"] if record.nullable else "object"}
        if record.description:
            schema["description"] = record.description
        # version 2 may leave out what a reader derives (the document's graph); the rest stays required
        required = [field.name for field in fields if field.required and not (self.packed and field.derived)]
        if required:
            schema["required"] = required
        properties = {field.name: self.field(field) for field in fields}
        if any(properties.values()):
            schema["properties"] = properties
        schema.update(self.type(dict(record.more)))
        return schema

    def field(self, field):
        schema = self.type(field.type)
        words = field.packed_description if self.packed and field.packed_description else field.description
        return {**schema, "description": words} if words else schema

    def table(self, record):
        """A table: the generic {count, columns, ...} and, per field, its column (required unless derived)."""
        columns = {"type": "object"}
        required = [field.name for field in record.fields if field.required and not field.derived]
        columns["required"] = required
        columns["properties"] = {field.name: self.column(field) for field in record.fields}
        columns["additionalProperties"] = {"$ref": "#/$defs/column"}
        return {"allOf": [{"$ref": "#/$defs/table"}, {"type": "object", "properties": {"columns": columns}}]}

    def column(self, field):
        schema = {"$ref": "#/$defs/nested" if field.column == NESTED else "#/$defs/column"}
        words = [field.packed_description or field.description]
        if field.column != PLAIN and not field.packed_description:
            words.append(COLUMN_WORDS[field.column])
        if field.derived:
            derivation = DERIVATIONS[field.derived.how].format(source=field.derived.source)
            words.append(f"derived: left out when it is {derivation} in every row")
        elif not field.required:
            words.append("a column: absent when no row has it")
        said = [word for word in words if word]
        if said:
            schema["description"] = said[0] + (f" ({'; '.join(said[1:])})" if said[1:] else "")
        return schema


def expanded_schema():
    """docs/trace.v1.schema.json: the expanded form, what every reader works on."""
    return _schema(1, "trace.v1.schema.json", "Tapescope trace document, expanded (schema_version 1)", (
        "The expanded form: what every reader works on (Python code before it packs a document, the page after "
        "static/js/state/trace-document.js decodes one), and what snapshots stored before schema_version 2 hold. "
        "docs/trace.schema.json (schema_version 2) packs the same records. "))


def packed_schema():
    """docs/trace.schema.json: schema_version 2, what the server sends and stores."""
    return _schema(2, "trace.schema.json", "Tapescope trace document (schema_version 2)", (
        "The trace document as the server sends and stores it. The records are those of "
        "docs/trace.v1.schema.json (the expanded form every reader works on); version 2 writes them as tables "
        "of columns and leaves out what a reader derives. backend/trace/document_versions.py packs and unpacks "
        "it, static/js/state/trace-document.js decodes it for the page; docs/trace.md says why each change was "
        "made. "))


class _RunForm(_Form):
    """A run of many ranks: its own fields, each rank's document by reference to the packed document's schema."""

    def type(self, node):
        if node is DOCUMENT:
            return {"$ref": "trace.schema.json"}
        return super().type(node)


def run_schema():
    """docs/trace-run.schema.json: the object a run of many ranks is (world_size, ranks), each rank's document a
    docs/trace.schema.json document (its $ref, relative to this schema's $id)."""
    rendered = _RunForm(2, packed=True).record(RUN)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://tapescope.local/trace-run.schema.json",
        "title": "Tapescope run of many ranks",
        **rendered,
        "description": RUN.description + " Each rank's document is one of docs/trace.schema.json. " + GENERATED_NOTE,
    }


def _schema(version, file_name, title, about):
    """One form's schema: the document's records written unpacked (version 1) or as tables (version 2)."""
    form = _Form(version, packed=version == 2)
    document = form.record(DOCUMENT)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://tapescope.local/{file_name}",
        "title": title,
        "description": about + DOCUMENT.description + " " + GENERATED_NOTE,
        **{key: value for key, value in document.items() if key != "description"},
        "$defs": {**form.defs, **(_table_definitions() if form.packed else {})},
    }


def _table_definitions():
    """The packed form's own types: a table, a column (plain, coded or nested) and a nested column."""
    scalar = {"type": ["string", "number", "boolean", "null"]}
    derived = {name: fields for name, fields in declared.derived_fields().items() if fields}
    left_out = "; ".join(f"{name}: " + ", ".join(
        f"{field} ({DERIVATIONS[how.how].format(source=how.source)})" for field, how in fields.items())
        for name, fields in derived.items())
    return {
        "table": {
            "type": "object",
            "required": ["count", "columns"],
            "description": ("rows as columns: row i of the record is the i-th value of every column. Left out columns "
                            f"are derived, per table: {left_out}. A column is written whenever some row does not "
                            "match its derivation."),
            "properties": {
                "count": {"type": "integer", "minimum": 0, "maximum": SCHEMA_MAX_ROWS,
                          "description": (f"rows in the table; at most {SCHEMA_MAX_ROWS:,} here, and each table has "
                                          "its own lower limit (backend/models/caps.py, posted_<table>)")},
                "columns": {"type": "object", "additionalProperties": {"$ref": "#/$defs/column"}},
                "optional": {"type": "array", "items": {"type": "string"},
                             "description": "columns where null means the row has no such field"},
                "sparse": {"type": "object",
                           "description": "fields only some rows have, which may also be null: {row index: value}",
                           "additionalProperties": {"type": "object", "propertyNames": {"pattern": "^[0-9]+$"}}},
            },
        },
        "column": {"oneOf": [
            {"type": "array", "maxItems": SCHEMA_MAX_ROWS},
            {"type": "object", "required": ["values", "index"],
             "description": "coded: the distinct values once, and each row's index into them",
             "properties": {
                 "values": {"type": "array", "maxItems": SCHEMA_MAX_ROWS, "items": {
                     "oneOf": [scalar, {"type": "object", "maxProperties": 8, "additionalProperties": scalar}],
                     "description": "a distinct value: a scalar or a flat object of scalars"}},
                 "index": {"type": "array", "items": {"type": "integer", "minimum": 0}, "maxItems": SCHEMA_MAX_ROWS},
             },
             "additionalProperties": False},
            {"$ref": "#/$defs/nested"},
        ]},
        "nested": {
            "type": "object", "required": ["columns"], "additionalProperties": False,
            "description": "an object-valued field written as one column per key",
            "properties": {"columns": {"type": "object", "maxProperties": 32,
                                       "additionalProperties": {"type": "array", "maxItems": SCHEMA_MAX_ROWS}}},
        },
    }


def page_columns():
    """static/js/state/trace-columns.js: the layout static/js/state/trace-document.js decodes by."""
    def js(value):
        return json.dumps(value, separators=(", ", ": "))

    def per_table(fields_of):
        return "{\n" + "".join(f"  {name}: {fields},\n" for name, fields in fields_of.items() if fields) + "}"

    def listed(column):
        return per_table({name: js(list(fields)) for name, fields in columns_of(column).items() if fields})

    def rules(fields):
        return "{ " + ", ".join(f"{field}: {js([how.how, how.source])}" for field, how in fields.items()) + " }"

    derived = per_table({name: rules(fields) for name, fields in declared.derived_fields().items() if fields})
    return "\n".join([
        "// trace-columns.js — how schema_version 2 writes each table, read by trace-document.js. Generated from",
        "// backend/trace/declaration.py by `python -m backend.trace.schemas` (make schemas): edit the declaration.",
        f"export const TABLES = {js(list(declared.TABLES))};",
        f"export const PACKED_ONLY = {js(list(declared.PACKED_ONLY))};",
        f"export const SCOPED = {listed(declared.SCOPED)};",
        f"export const WITH_STATISTICS = {listed(declared.STATISTICS)};",
        "// per table, field: [how, the field it reads] (DERIVATIONS in backend/trace/declaration_types.py)",
        f"export const DERIVED = {derived};",
        "",
    ])


def generated():
    """{path under the repository: the text it must hold}."""
    def as_json(schema):
        return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"

    return {EXPANDED_PATH: as_json(expanded_schema()), PACKED_PATH: as_json(packed_schema()),
            RUN_PATH: as_json(run_schema()), PAGE_COLUMNS_PATH: page_columns()}


def main(argv):
    check = "--check" in argv
    stale = []
    for path, text in generated().items():
        target = ROOT / path
        if target.exists() and target.read_text() == text:
            continue
        stale.append(path)
        if not check:
            target.write_text(text)
    verb = "differ from backend/trace/declaration.py (run make schemas)" if check else "written"
    print(f"{', '.join(stale)}: {verb}" if stale else "the generated files are up to date")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
