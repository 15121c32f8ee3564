"""A trace document from outside (POST /api/traces): schema-validated, then every figure checked against the others.

`load_posted_document(obj)` is the one door: it returns the document when it holds together and raises
`PostedDocumentError` (its `problems` each name a path) when it does not. The server never trusts a posted
figure it can recompute: ids are unique and every reference resolves; intervals lie within the step range;
a tensor's bytes are its storage's and its shape fits in it (numel × itemsize); the live-bytes series by kind
is what the storages' intervals imply; the peak is the series' maximum; the saved bytes are the unique
storages the forward tape holds. Only the semantic fields are checked (tensors, storages, tape, steps, sweep,
graph, summary). A schema_version 2 document (what the command line writes) is checked against its own schema,
unpacked, and the expanded records checked as a version 1 document's are.
"""
import json
import math
from functools import lru_cache
from pathlib import Path

import jsonschema
import jsonschema_rs

from backend.models.caps import cap
from backend.problems import Problems
from backend.trace.deadline import check as check_deadline
from backend.trace.declaration import RUN
from backend.trace.document import _saved_bytes
from backend.trace.memory import live_bytes_by_kind
from backend.trace.memory_kinds import MEMORY_KIND_NAMES
from backend.trace.document_versions import ACCEPTED_VERSIONS, TABLES, unpack

DOCS = Path(__file__).resolve().parents[2] / "docs"
SCHEMA_PATHS = {1: DOCS / "trace.v1.schema.json", 2: DOCS / "trace.schema.json"}
ITEMSIZE = {"bool": 1, "uint8": 1, "int8": 1, "int16": 2, "float16": 2, "bfloat16": 2, "int32": 4, "float32": 4,
            "int64": 8, "float64": 8, "complex64": 8, "complex128": 16}
# What one posted document may hold: a row cap per table, `posted_<table>` in backend/models/caps.py (the many-GPU
# runs raise them there). The body's byte cap (TRACE_UPLOAD_MAX_BYTES) binds first: a table's columns must be in the
# body, so rows cost what the body carries. docs/trace.schema.json caps a table at SCHEMA_MAX_ROWS, the largest of
# them when the schema was generated (tests/trace check they agree).
COUNTED_TABLES = ("tensors", "storages", "tape", "steps", "sweep")


def row_cap(table):
    """The most rows a posted document's `table` may have."""
    return cap(f"posted_{table}")


SCHEMA_MAX_ROWS = max(row_cap(table) for table in COUNTED_TABLES)


class PostedDocumentError(ValueError):
    """The posted document is not one we can show; `problems` (backend.problems.Problems) says where."""

    def __init__(self, message, problems):
        super().__init__(message)
        self.problems = Problems.of(problems)


class PostedDocumentTooLarge(ValueError):
    """A list over its row cap: `cap` names the table, `size` and `limit` say by how much."""

    def __init__(self, cap, size, limit):
        super().__init__(f"The document's {cap} list has {size:,} entries; the limit is {limit:,}.")
        self.cap, self.size, self.limit = cap, size, limit


def _schema(version):
    return json.loads(SCHEMA_PATHS[version].read_text())


@lru_cache(maxsize=2)
def _fast_validator(version):
    """The schema compiled by jsonschema-rs (Rust): says whether a document is valid, ~150× faster than jsonschema
    on a 2 MB document (0.002 s against 0.29 s). tests/trace/test_schema_validators.py holds it to jsonschema's
    verdict on every fixture and on hundreds of documents mutated at random."""
    return jsonschema_rs.Draft202012Validator(_schema(version))


@lru_cache(maxsize=2)
def _validator(version):
    """jsonschema's validator: the problems of a document the fast one refused, each with its path and message."""
    schema = _schema(version)
    return jsonschema.Draft202012Validator(_inline_definitions(schema, schema.get("$defs", {})))


def schema_valid(document, version):
    """Whether `document` (plain JSON values) matches schema `version`, asked of the fast validator; a value it
    cannot take (not a JSON type) is left to jsonschema."""
    try:
        return _fast_validator(version).is_valid(document)
    except ValueError:
        return _validator(version).is_valid(document)


def _inline_definitions(node, definitions, expanding=()):
    """The schema with each `{"$ref": "#/$defs/NAME"}` replaced by the definition itself (a recursive one stays a
    reference): jsonschema resolves a reference anew at every instance it checks, ~40% of a document's check."""
    if isinstance(node, list):
        return [_inline_definitions(item, definitions, expanding) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    name = ref[len("#/$defs/"):] if isinstance(ref, str) and ref.startswith("#/$defs/") else None
    if name in definitions and name not in expanding:
        definition = _inline_definitions(definitions[name], definitions, (*expanding, name))
        rest = {key: value for key, value in node.items() if key != "$ref"}
        return {"allOf": [definition, _inline_definitions(rest, definitions, expanding)]} if rest else definition
    return {key: _inline_definitions(value, definitions, expanding) for key, value in node.items()}


def load_posted_document(obj):
    """The document `obj`, validated and checked for consistency; PostedDocumentError / TooLarge otherwise."""
    if not isinstance(obj, dict):
        raise PostedDocumentError("The body must be a trace document (a JSON object).",
                                  [{"path": "body", "message": "must be an object with schema_version, tensors, ..."}])
    version = obj.get("schema_version")
    if version not in ACCEPTED_VERSIONS:
        raise PostedDocumentError("The document's schema_version is not one this server reads.", [{
            "path": "schema_version", "message": f"is {json.dumps(version)[:40]}; send a trace document with "
                                                 f"schema_version {' or '.join(map(str, ACCEPTED_VERSIONS))}."}])
    document = obj
    if version == 2:
        _check_table_shapes(obj)                            # before anything is built from a count or an index
        _check_schema(obj, 2)
        document = _unpacked(obj)
    _check_counts(document)
    _check_schema({**document, "schema_version": 1}, 1)      # the expanded records, whichever version came
    problems = Problems()
    for check in (_check_ids, _check_intervals, _check_bytes, _check_references, _check_timeline):
        check_deadline()             # the upload route runs under a deadline (backend/api/traces.py)
        check(document, problems)
        if problems.count:           # later checks stand on earlier ones (ids resolve before bytes are summed)
            raise PostedDocumentError("The document's figures do not add up; nothing was saved.", problems)
    return document


def _unpacked(packed):
    """The expanded records of a schema-valid version 2 document; a table whose columns do not line up (a coded
    index past its values, a column shorter than the table) is refused, never a 500."""
    try:
        return unpack(packed)
    except (KeyError, IndexError, TypeError, ValueError) as error:
        raise PostedDocumentError("The document's tables cannot be unpacked; nothing was saved.", [{
            "path": "body", "message": f"a column does not line up with its table ({type(error).__name__}: "
                                       f"{str(error)[:120]}); write the document with the recorder"}])


def _check_table_shapes(packed):
    """A version 2 document's tables, bounded before a row is built: each count within its row cap and
    every column (plain, coded index, nested) exactly count long, coded indices within their values, sparse rows
    within the count. Unpacking then allocates no more than the body already holds, row for row."""
    problems = Problems()
    for name in TABLES:
        table = packed.get(name)
        if not isinstance(table, dict):
            continue                                    # the schema names a missing or mistyped table
        count = table.get("count")
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            continue
        if count > row_cap(name):
            raise PostedDocumentTooLarge(name, count, row_cap(name))
        columns = table.get("columns")
        for field, column in (columns.items() if isinstance(columns, dict) else ()):
            for where, length, bound in _column_lengths(column):
                path = f"{name}.columns.{field}{where}"
                if length != count:
                    problems.add(path, f"has {length:,} entries for a table of {count:,} rows; every column is one "
                                       "value per row")
                elif bound is not None:
                    problems.add(path, bound)
        sparse = table.get("sparse")
        for field, values in (sparse.items() if isinstance(sparse, dict) else ()):
            if isinstance(values, dict) and any(not key.isdigit() or int(key) >= count for key in values):
                problems.add(f"{name}.sparse.{field}", f"names a row outside the table's {count:,}")
    if problems.count:
        raise PostedDocumentError("The document's tables do not line up; nothing was saved.", problems)


def _column_lengths(column):
    """(where, length, a problem with its values or None) for each array a column holds."""
    if isinstance(column, list):
        return [("", len(column), None)]
    if not isinstance(column, dict):
        return []
    if "index" in column:
        index, values = column.get("index"), column.get("values")
        if not isinstance(index, list) or not isinstance(values, list):
            return []
        bad = next((i for i in index if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(values)),
                   None)
        problem = None if bad is None else f"holds {bad!r}, not an index into its {len(values)} values"
        return [(".index", len(index), problem)]
    nested = column.get("columns")
    if isinstance(nested, dict):
        return [(f".columns.{key}", len(values), None) for key, values in nested.items() if isinstance(values, list)]
    return []


def _check_counts(document):
    for name in COUNTED_TABLES:
        value, limit = document.get(name), row_cap(name)
        if isinstance(value, list) and len(value) > limit:
            raise PostedDocumentTooLarge(name, len(value), limit)


def _check_schema(document, version):
    """Nothing when the document is valid (the fast validator's answer); else every problem, as jsonschema words it."""
    if schema_valid(document, version):
        return
    problems = Problems()
    for error in sorted(_validator(version).iter_errors(document), key=lambda e: list(map(str, e.absolute_path))):
        parts = list(error.absolute_path)
        if error.validator == "required" and isinstance(error.instance, dict):     # name the missing field itself
            parts.append(next((name for name in error.validator_value if name not in error.instance), ""))
        problems.add(_path(parts) or "body", error.message[:300])
    if problems.count:
        raise PostedDocumentError(f"The document does not match docs/{SCHEMA_PATHS[version].name}; nothing was saved.",
                                  problems)


def _path(parts):
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


# ----- ids: unique, and numbered as the document numbers them ---------------------------------------
def _check_ids(document, problems):
    for name, key in (("tensors", "id"), ("storages", "id"), ("tape", "index"), ("steps", "index")):
        seen = set()
        for position, item in enumerate(document[name]):
            if item[key] in seen:
                problems.add(f"{name}[{position}].{key}", f"{item[key]} is used twice; ids must be unique.")
            seen.add(item[key])
    for name in ("tape", "steps"):                  # steps are numbered across phases, entries in tape order
        for position, item in enumerate(document[name]):
            if item["index"] != position:
                problems.add(f"{name}[{position}].index", f"is {item['index']}; it must be its position, {position}.")


# ----- intervals: born ≤ freed, both within the steps ------------------------------------------------
def _check_intervals(document, problems):
    last = len(document["steps"]) - 1
    if last < 0:
        problems.add("steps", "has no steps; a run has at least one.")
        return
    for name in ("tensors", "storages"):
        for position, item in enumerate(document[name]):
            born, freed = item["born"], item["freed"]
            if born > last:
                problems.add(f"{name}[{position}].born", f"is step {born}; the steps run from 0 to {last}.")
            if freed is not None and not born <= freed <= last:
                problems.add(f"{name}[{position}].freed",
                             f"is step {freed}; it must lie between born ({born}) and the last step ({last}).")
    for position, item in enumerate(document["sweep"]):
        if item["step"] > last:
            problems.add(f"sweep[{position}].step", f"is step {item['step']}; the steps run from 0 to {last}.")


# ----- bytes: a tensor is counted by its storage, and its shape fits in it ---------------------------
def _check_bytes(document, problems):
    storages = {s["id"]: s for s in document["storages"]}
    for position, storage in enumerate(document["storages"]):
        if storage["nbytes"] > cap("posted_storage_bytes"):              # summed in int64 below
            problems.add(f"storages[{position}].nbytes", f"is {storage['nbytes']:,}; no storage holds more than "
                                                         f"{cap('posted_storage_bytes'):,} bytes (1 PiB).")
    for position, tensor in enumerate(document["tensors"]):
        path = f"tensors[{position}]"
        storage = storages.get(tensor["storage"])
        if storage is None:
            problems.add(f"{path}.storage", f"names storage {tensor['storage']}, which the document does not have.")
            continue
        itemsize = ITEMSIZE.get(tensor["dtype"])
        if itemsize is None:
            problems.add(f"{path}.dtype", f"{tensor['dtype']!r} is not a dtype we know: one of {sorted(ITEMSIZE)}.")
            continue
        if tensor["nbytes"] != storage["nbytes"]:
            problems.add(f"{path}.nbytes", f"is {tensor['nbytes']:,}; its storage {storage['id']} holds "
                                           f"{storage['nbytes']:,} bytes, and a tensor is counted by its storage.")
        needed = math.prod(tensor["shape"]) * itemsize
        if not tensor.get("view") and needed > storage["nbytes"]:
            problems.add(f"{path}.shape", f"{tensor['shape']} of {tensor['dtype']} is {needed:,} bytes "
                                          f"(numel × itemsize); its storage holds only {storage['nbytes']:,}.")
        if tensor["address"] != storage["address"]:
            problems.add(f"{path}.address", f"is {tensor['address']}; its storage is at {storage['address']}.")
        if tensor["born"] < storage["born"] or tensor["freed"] != storage["freed"]:
            problems.add(f"{path}.born", f"the tensor lives {tensor['born']}..{tensor['freed']}, its storage "
                                         f"{storage['born']}..{storage['freed']}: a tensor is born in its storage's "
                                         "life and freed with it.")


# ----- references: every id named anywhere exists ----------------------------------------------------
def _check_references(document, problems):
    tensors = {t["id"] for t in document["tensors"]}
    entries = len(document["tape"])
    storages = {s["id"] for s in document["storages"]}
    steps = len(document["steps"])

    # The schema leaves some references untyped (graph ids, contributions): anything but an int names nothing.
    def tensor(path, uid, allow_none=False):
        if not (uid is None and allow_none) and not (type(uid) is int and uid in tensors):
            problems.add(path, f"names tensor {_short(uid)}, which the document does not have.")

    def entry(path, index, allow_none=False):
        if not (index is None and allow_none) and not (type(index) is int and 0 <= index < entries):
            problems.add(path, f"names tape entry {_short(index)}; the tape has entries 0 to {entries - 1}.")

    for i, t in enumerate(document["tensors"]):
        entry(f"tensors[{i}].produced_by", t.get("produced_by"), allow_none=True)
        for j, index in enumerate(t["saved_by"]):
            entry(f"tensors[{i}].saved_by[{j}]", index)
        if "grad_of" in t:
            tensor(f"tensors[{i}].grad_of", t["grad_of"])
    for i, e in enumerate(document["tape"]):
        for field in ("inputs", "saved"):
            for j, uid in enumerate(e[field]):
                tensor(f"tape[{i}].{field}[{j}]", uid)
        tensor(f"tape[{i}].output", e["output"], allow_none=True)
    for i, s in enumerate(document["steps"]):
        entry(f"steps[{i}].entry", s["entry"], allow_none=True)
    for i, item in enumerate(document["sweep"]):
        path = f"sweep[{i}]"
        entry(f"{path}.entry", item["entry"])
        if item["adjoint"] is not None:
            tensor(f"{path}.adjoint.tensor", item["adjoint"]["tensor"], allow_none=True)
        for field in ("reads", "freed"):
            for j, uid in enumerate(item[field]):
                tensor(f"{path}.{field}[{j}]", uid)
        for j, index in enumerate(item["ready"]):          # the entries this one made ready: tape indexes
            entry(f"{path}.ready[{j}]", index)
        for j, part in enumerate(item["contributions"]):
            tensor(f"{path}.contributions[{j}].to", part["to"])
            tensor(f"{path}.contributions[{j}].grad", part["grad"], allow_none=True)
        for j, part in enumerate(item["accumulations"]):
            for field in ("tensor", "total"):
                tensor(f"{path}.accumulations[{j}].{field}", part[field], allow_none=field == "total")
            if not isinstance(part["parts"], list):
                problems.add(f"{path}.accumulations[{j}].parts", "must be a list of tensor ids.")
                continue
            for k, uid in enumerate(part["parts"]):
                tensor(f"{path}.accumulations[{j}].parts[{k}]", uid)
    _check_graph(document["graph"], entry, tensor, problems)
    peak = document["summary"].get("peak")
    for i, holder in enumerate(peak["holders"] if peak else []):
        for j, sid in enumerate(holder["storages"]):
            if sid not in storages:
                problems.add(f"summary.peak.holders[{i}].storages[{j}]", f"names storage {sid}, which is not there.")
        for j, uid in enumerate(holder["tensors"]):
            tensor(f"summary.peak.holders[{i}].tensors[{j}]", uid)
    if document["summary"]["peak_step"] >= steps:
        problems.add("summary.peak_step", f"is step {document['summary']['peak_step']}; the last step is {steps - 1}.")


def _check_graph(graph, entry, tensor, problems):
    ids = set()
    for name in ("nodes", "leaves"):
        for i, node in enumerate(graph[name]):
            if name == "nodes":
                entry(f"graph.nodes[{i}].entry", node["entry"])
            else:
                tensor(f"graph.leaves[{i}].tensor", node["tensor"])
            if not isinstance(node["id"], str):
                problems.add(f"graph.{name}[{i}].id", "must be a string (e0, t3).")
            elif node["id"] in ids:
                problems.add(f"graph.{name}[{i}].id", f"{_short(node['id'])} is used twice; node ids must be unique.")
            else:
                ids.add(node["id"])
    for i, edge in enumerate(graph["edges"]):
        for end in ("source", "target"):
            if not (isinstance(edge[end], str) and edge[end] in ids):
                problems.add(f"graph.edges[{i}].{end}", f"names node {_short(edge[end])}, which the graph does not have.")
        tensor(f"graph.edges[{i}].tensor", edge["tensor"])


def _short(value):
    """A value as a problem quotes it: at most 40 characters of its JSON-ish text."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ----- the timeline: live bytes, by kind, the peak and the saved bytes, as the intervals imply -------
def _check_timeline(document, problems):
    """A kind declared after a document was written (declaration.BY_KIND_ALWAYS) is absent from its by_kind: 0."""
    storages, steps, summary = document["storages"], document["steps"], document["summary"]
    live, by_kind = live_bytes_by_kind(storages, len(steps))
    for i, step in enumerate(steps):
        if step["live_bytes"] != live[i]:
            problems.add(f"steps[{i}].live_bytes", f"is {step['live_bytes']:,}; the storages alive at step {i} "
                                                   f"hold {int(live[i]):,} bytes.")
        for kind in MEMORY_KIND_NAMES:
            if step["by_kind"].get(kind, 0) != by_kind[kind][i]:
                problems.add(f"steps[{i}].by_kind.{kind}", f"is {step['by_kind'].get(kind, 0)}; the {kind} storages "
                                                           f"alive at step {i} hold {int(by_kind[kind][i]):,} bytes.")
    peak_bytes = int(live.max())
    if summary["peak_bytes"] != peak_bytes:
        problems.add("summary.peak_bytes", f"is {summary['peak_bytes']:,}; the live-bytes series peaks at {peak_bytes:,}.")
    peak_step = summary["peak_step"]
    if live[peak_step] != peak_bytes:
        problems.add("summary.peak_step", f"holds {int(live[peak_step]):,} bytes, not the peak's {peak_bytes:,}.")
    for kind in MEMORY_KIND_NAMES:
        at_peak = summary["by_kind_at_peak"].get(kind, 0)
        if at_peak != by_kind[kind][peak_step]:
            problems.add(f"summary.by_kind_at_peak.{kind}", f"is {at_peak:,}; at the peak "
                                                            f"step the {kind} storages hold {int(by_kind[kind][peak_step]):,}.")
    tensors = {t["id"]: t for t in document["tensors"]}
    saved = _saved_bytes(document["tape"], tensors, storages, document["steps"], document["sweep"])
    if summary["saved_bytes"] != saved:
        problems.add("summary.saved_bytes", f"is {summary['saved_bytes']:,}; the forward tape holds at most {saved:,} "
                                            "bytes of unique storages at once.")
    peak = summary.get("peak")
    if peak is not None:
        _check_peak_explanation(peak, peak_step, peak_bytes, problems)


def _check_peak_explanation(peak, peak_step, peak_bytes, problems):
    if peak["step"] != peak_step:
        problems.add("summary.peak.step", f"is {peak['step']}; summary.peak_step is {peak_step}.")
    if peak["live_bytes"] != peak_bytes:
        problems.add("summary.peak.live_bytes", f"is {peak['live_bytes']:,}; the peak is {peak_bytes:,}.")
    held = sum(holder["bytes"] for holder in peak["holders"])
    if held != peak_bytes:
        problems.add("summary.peak.holders", f"sum to {held:,} bytes; the peak is {peak_bytes:,}.")


# ----- a run of many ranks: {"world_size": N, "ranks": [document, ...]} ------------------------------
# What `python -m backend.importers.torch MODEL_FILE --nproc N` (or torchrun) writes (docs/torch-import.md, "Many
# ranks"), declared as backend/trace/declaration.py's RUN: its fields are checked here, each rank's document as a
# single posted one is.
RUN_FIELDS = tuple(field.name for field in RUN.fields)          # world_size, ranks


def is_many_ranks(obj):
    """True when `obj` is a multi-rank run's object (it names `ranks` and carries no schema_version of its own)."""
    return isinstance(obj, dict) and "ranks" in obj and "schema_version" not in obj


def load_posted_ranks(obj):
    """Every rank's document of a posted multi-rank run, each checked by load_posted_document; a problem in a rank's
    document is named under ranks[i]. PostedDocumentError / TooLarge otherwise."""
    ranks, world_size = obj.get("ranks"), obj.get("world_size")
    problems = Problems()
    unknown = sorted(set(obj) - set(RUN_FIELDS))
    if unknown:
        problems.add(unknown[0][:200], "is not a field of a multi-rank run; it holds world_size and ranks")
    if not isinstance(ranks, list) or not ranks:
        problems.add("ranks", "must be a list of every rank's trace document, rank 0 first")
    elif len(ranks) > cap("ranks"):
        raise PostedDocumentTooLarge("ranks", len(ranks), cap("ranks"))
    if not isinstance(world_size, int) or isinstance(world_size, bool) or world_size < 1:
        problems.add("world_size", f"is {json.dumps(world_size)[:40]}; it must be the number of ranks (an integer ≥ 1)")
    elif isinstance(ranks, list) and ranks and len(ranks) != world_size:
        problems.add("ranks", f"holds {len(ranks)} documents for a world_size of {world_size}; a run has one per rank")
    if problems.count:
        raise PostedDocumentError("The run's ranks are not a multi-rank run.json; nothing was saved.", problems)
    documents = []
    for position, posted in enumerate(ranks):
        try:
            document = load_posted_document(posted)
        except PostedDocumentError as error:
            raise PostedDocumentError(f"Rank {position}'s document: {error}", Problems(
                [{**problem, "path": f"ranks[{position}].{problem['path']}"} for problem in error.problems])) from None
        except PostedDocumentTooLarge as error:
            raise PostedDocumentTooLarge(f"ranks[{position}].{error.cap}", error.size, error.limit) from None
        for field, wanted in (("rank", position), ("world_size", world_size)):
            if document.get(field) != wanted:
                problems.add(f"ranks[{position}].{field}", f"is {json.dumps(document.get(field))[:40]}; the document "
                                                           f"at ranks[{position}] is rank {position} of {world_size}")
        documents.append(document)
    if problems.count:
        raise PostedDocumentError("The run's documents do not say which rank they are; nothing was saved.", problems)
    return documents
