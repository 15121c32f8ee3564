"""Trace document versions: schema_version 2 (what leaves the server) packed from, and unpacked into, the
expanded form every reader works on (the schema_version 1 layout); `upgrade` turns any accepted version into 2.

Version 1 wrote every record as an object with its keys, and repeated what the record's neighbours already say:
an op's explanation on each tape entry and sweep item, a step's five by_kind keys, each tensor's storage address,
a graph that is the tape seen from its edges. Version 2 keeps the same records and changes how they are written:

- tensors, storages, tape, sweep and steps are tables: {"count", "columns": {field: [one value per row]}}.
  A column of few distinct values is coded, {"values": [...distinct], "index": [...]}; a field some rows lack
  is listed in "optional" (null there means the row has no such key) or, when it can also be null, in
  "sparse" ({row: value}).
- scope strings are written once in "scopes"; scope columns hold their index (null stays null).
- an op's family, backward name and "why" are written once per op in "ops".
- columns a reader derives are left out (each only when every row agrees with its derivation, so nothing is
  lost for a document that does not): a row's own index; a tensor's address and nbytes (its storage's); a
  sweep item's op, backward, why and reads (its tape entry's); a step's live_bytes (the sum of its by_kind,
  itself one column per kind); the graph (nodes, leaves and edges from the tape and the tensors).
- value statistics are arrays [min, max, mean, norm] with the base64 float16 values fifth when carried.

The page decodes version 2 in static/js/state/trace-document.js; `unpack` is the same decoding in Python. Which
columns are coded, scoped, statistics or nested, and which are derived and how, is declared once, in
backend/trace/declaration.py (which the schemas and the page's column list are generated from): this module reads it.
"""
import copy

from backend.trace import declaration
from backend.trace.deadline import check as check_deadline
from backend.trace.document import graph_of

CURRENT_VERSION = 2
ACCEPTED_VERSIONS = (1, 2)
OP_TEXT = declaration.OP_TEXT
STATISTICS = declaration.STATISTICS_FIELDS
STATISTICS_AND_VALUES = declaration.STATISTICS_AND_VALUES
TABLES = declaration.TABLES

# Per table: columns coded by distinct value, scope columns (indices into "scopes"), object columns whose value
# statistics become arrays, and object columns of fixed keys written as one column per key (a nested table).
CODED = declaration.columns_of(declaration.CODED)
SCOPED = declaration.columns_of(declaration.SCOPED)
WITH_STATISTICS = declaration.columns_of(declaration.STATISTICS)
NESTED = declaration.columns_of(declaration.NESTED)
# Per table, {field: Derived}: the columns left out when every row agrees with their derivation.
DERIVED = declaration.derived_fields()
PACKED_ONLY = declaration.PACKED_ONLY


class DocumentVersionError(ValueError):
    """A document whose schema_version this server cannot read; the message says which ones it can."""


def upgrade(document):
    """Any accepted trace document as the current version (2); a version 2 document is returned as it is.

    A document from outside (POST /api/traces) is checked against its version's schema first
    (docs/trace.v1.schema.json, docs/trace.schema.json): packing reads the fields version 1 requires."""
    version = document.get("schema_version") if isinstance(document, dict) else None
    if version == CURRENT_VERSION:
        return document
    if version == 1:
        return pack(document)
    raise DocumentVersionError(f"schema_version {version!r} is not one this server reads: send a trace document "
                               f"with schema_version {' or '.join(map(str, ACCEPTED_VERSIONS))}.")


def step_count(document):
    """How many steps a document of either version has (None when it says nothing readable about them)."""
    steps = document.get("steps") if isinstance(document, dict) else None
    if isinstance(steps, list):
        return len(steps)
    if isinstance(steps, dict) and isinstance(steps.get("count"), int):
        return steps["count"]
    return None


# ------------------------------ packing: expanded (v1) -> v2 ------------------------------
def pack(document):
    """The version 2 form of an expanded (schema_version 1) document; `unpack` gives it back, equal field by field."""
    packed = {key: value for key, value in document.items() if key not in TABLES + ("graph",)}
    packed["schema_version"] = CURRENT_VERSION
    scopes = _Scopes()
    ops = _op_texts(document["tape"])
    storages, tape = document["storages"], document["tape"]
    storage_of = {s["id"]: s for s in storages}
    columns = {               # Derived.how -> the whole column a reader would derive, for the field it reads
        "row": lambda source: lambda rows: list(range(len(rows))),
        "storage": lambda source: lambda rows: [storage_of[row["storage"]][source] for row in rows],
        "op": lambda source: _op_text(ops, source),
        "entry": lambda source: lambda rows: [tape[row["entry"]][source] for row in rows],
        "sum": lambda source: lambda rows: [sum(row[source].values()) for row in rows],
    }
    for name in TABLES:
        derived = {field: columns[how.how](how.source) for field, how in DERIVED[name].items()}
        packed[name] = _table(name, document[name], derived, scopes)
    if ops is not None:
        packed["ops"] = ops
    packed["scopes"] = scopes.values
    if document["graph"] != graph_of(tape, document["tensors"]):
        packed["graph"] = document["graph"]          # someone else's graph: kept as it came
    return packed


class _Scopes:
    """Scope strings in first-seen order; a scope column holds indices into them."""

    def __init__(self):
        self.values, self._index = [], {}

    def indices(self, scopes):
        index = self._index
        for scope in scopes:
            if scope not in index and scope is not None:
                index[scope] = len(self.values)
                self.values.append(scope)
        return [None if scope is None else index[scope] for scope in scopes]


def _op_texts(tape):
    """{op: {family, backward, why}} when every entry of an op says the same; None when some do not."""
    ops = {}
    for entry in tape:
        text = {field: entry.get(field) for field in OP_TEXT}
        if ops.setdefault(entry["op"], text) != text:
            return None
    return ops


def _op_text(ops, field):
    if ops is None:
        return lambda rows: None
    return lambda rows: [ops[entry["op"]][field] for entry in rows]


_ABSENT = object()       # a row without the field


def _table(name, rows, derivations, scopes):
    shapes = dict.fromkeys(tuple(row) for row in rows)               # the distinct key orders, few
    fields = list(dict.fromkeys(field for shape in shapes for field in shape))
    columns, optional, sparse = {}, [], {}
    for field in fields:
        values = [row.get(field, _ABSENT) for row in rows]
        derive = derivations.get(field)
        if derive is not None and values == derive(rows):
            continue
        absent = [i for i, value in enumerate(values) if value is _ABSENT]
        if absent:
            if None in values:
                present = {str(i): value for i, value in enumerate(values) if value is not _ABSENT}
                encoded = _column(name, field, list(present.values()), scopes, coded=False)
                sparse[field] = dict(zip(present, encoded))
                continue
            optional.append(field)
            for i in absent:
                values[i] = None
        columns[field] = _column(name, field, values, scopes)
    table = {"count": len(rows), "columns": columns}
    if optional:
        table["optional"] = optional
    if sparse:
        table["sparse"] = sparse
    return table


def _column(name, field, values, scopes, coded=True):
    if field in NESTED.get(name, ()) and _same_keys(values):
        keys = list(values[0])
        return {"columns": {key: [value[key] for value in values] for key in keys}}
    if field in SCOPED.get(name, ()) and all(value is None or isinstance(value, str) for value in values):
        return scopes.indices(values)
    if field in WITH_STATISTICS.get(name, ()):
        values = [_statistics_array(value) for value in values]
    if coded and field in CODED.get(name, ()):
        distinct, index = [], {}
        keys = [value if isinstance(value, str) else repr(value) for value in values]
        for key, value in zip(keys, values):
            if key not in index:
                index[key] = len(distinct)
                distinct.append(value)
        return {"values": distinct, "index": [index[key] for key in keys]}
    return values


def _same_keys(values):
    return bool(values) and all(isinstance(v, dict) and list(v) == list(values[0]) for v in values)


def _statistics_array(value):
    """{min, max, mean, norm[, f16], ...rest} as [min, max, mean, norm], [.., f16] or [.., f16 or null, {rest}]."""
    try:
        array = [value["min"], value["max"], value["mean"], value["norm"]]
    except (TypeError, KeyError):
        return value                         # not statistics: written as it is
    size = len(value)
    if size == 4:
        return array
    if size == 5 and "f16" in value:
        array.append(value["f16"])
        return array
    rest = {key: v for key, v in value.items() if key not in STATISTICS_AND_VALUES}     # an adjoint's tensor, shape
    return array + [value.get("f16"), rest]


# ------------------------------ unpacking: v2 -> expanded ------------------------------
def unpack(packed):
    """The expanded form (schema_version 1's layout, schema_version kept at 2) of a version 2 document."""
    document = {key: copy.deepcopy(value) for key, value in packed.items()
                if key not in TABLES + PACKED_ONLY + ("graph",)}
    scopes, ops = packed["scopes"], packed.get("ops") or {}
    tables = {}
    storage_of = {}
    absent = object()
    values = {                # Derived.how -> (row index, row, the field it reads) -> the value, or absent
        "row": lambda i, row, source: i,
        "storage": lambda i, row, source: storage_of[row["storage"]][source],
        "op": lambda i, row, source: ops.get(row["op"], {}).get(source, absent),
        "entry": lambda i, row, source: copy.copy(tables["tape"][row["entry"]][source]),
        "sum": lambda i, row, source: sum(row[source].values()),
    }
    for name in TABLES:       # in declared order: a table's derivations read only the tables before it
        rows = tables[name] = _rows(name, packed[name], scopes)
        for field, how in DERIVED[name].items():
            value_of = values[how.how]
            for i, row in enumerate(rows):
                if field not in row:
                    value = value_of(i, row, how.source)
                    if value is not absent:
                        row[field] = value
        if name == "storages":
            storage_of.update((storage["id"], storage) for storage in rows)
    document.update(tables)
    document["graph"] = (copy.deepcopy(packed["graph"]) if "graph" in packed
                         else graph_of(tables["tape"], tables["tensors"]))
    return document


def _rows(name, table, scopes):
    check_deadline()                 # a posted document is unpacked under the upload route's deadline
    rows = [{} for _ in range(table["count"])]
    optional = set(table.get("optional", ()))
    for field, column in table["columns"].items():
        for row, value in zip(rows, _values(column, table["count"])):
            if value is None and field in optional:
                continue
            row[field] = _decode(name, field, value, scopes)
    for field, values in table.get("sparse", {}).items():
        for i, value in values.items():
            rows[int(i)][field] = _decode(name, field, value, scopes)
    return rows


def _values(column, count):
    if isinstance(column, list):
        return column
    if "index" in column:          # a distinct value is a scalar or a flat object (the schema's): no deep copy
        values = column["values"]
        return [dict(values[i]) if isinstance(values[i], dict) else values[i] for i in column["index"]]
    keys = list(column["columns"])
    return [{key: column["columns"][key][i] for key in keys} for i in range(count)]


def _decode(name, field, value, scopes):
    if field in SCOPED.get(name, ()) and (value is None or isinstance(value, int)):
        return None if value is None else scopes[value]
    if field in WITH_STATISTICS.get(name, ()) and isinstance(value, list):
        described = dict(zip(STATISTICS, value[:4]))
        if len(value) > 4 and value[4] is not None:
            described["f16"] = value[4]
        if len(value) > 5:
            described.update(value[5])
        return described
    return value

