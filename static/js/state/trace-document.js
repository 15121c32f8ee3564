// trace-document.js — the one reader of trace documents: schema_version 2 (docs/trace.schema.json) decoded into
// the expanded records every view reads (docs/trace.v1.schema.json's layout). A schema_version 1 document, as
// snapshots stored before version 2 hold, already is that layout and passes as it is. The same decoding in
// Python is backend/trace/document_versions.py's unpack.

import { OP_TEXT, SCOPED, TABLES, WITH_STATISTICS } from "./trace-columns.js";     // generated: make schemas

/** The expanded form of a trace document of either version (anything else is returned as it came). */
export function readTrace(document) {
  if (!document || document.schema_version !== 2) return document;
  const expanded = {};
  for (const [key, value] of Object.entries(document)) {
    if (!TABLES.includes(key) && key !== "ops" && key !== "scopes" && key !== "graph") expanded[key] = value;
  }
  const scopes = document.scopes;
  const ops = document.ops || {};
  const storages = rows("storages", document.storages, scopes);
  const storageOf = new Map(storages.map((storage) => [storage.id, storage]));
  const tensors = rows("tensors", document.tensors, scopes);
  for (const tensor of tensors) {
    const storage = storageOf.get(tensor.storage);
    if (!("address" in tensor)) tensor.address = storage.address;
    if (!("nbytes" in tensor)) tensor.nbytes = storage.nbytes;
  }
  const tape = rows("tape", document.tape, scopes);
  tape.forEach((entry, index) => {
    if (!("index" in entry)) entry.index = index;
    const text = ops[entry.op] || {};
    for (const field of OP_TEXT) if (!(field in entry) && field in text) entry[field] = text[field];
  });
  const sweep = rows("sweep", document.sweep, scopes);
  for (const item of sweep) {
    const entry = tape[item.entry];
    if (!("op" in item)) item.op = entry.op;
    if (!("backward" in item)) item.backward = entry.backward;
    if (!("why" in item)) item.why = entry.why;
    if (!("reads" in item)) item.reads = entry.saved.slice();
  }
  const steps = rows("steps", document.steps, scopes);
  steps.forEach((step, index) => {
    if (!("index" in step)) step.index = index;
    if (!("live_bytes" in step)) step.live_bytes = Object.values(step.by_kind).reduce((sum, bytes) => sum + bytes, 0);
  });
  return { ...expanded, storages, tensors, tape, sweep, steps, graph: document.graph || graphOf(tape, tensors) };
}

/** A table's rows: row i takes the i-th value of each column; optional columns' nulls and sparse fields as absent. */
function rows(name, table, scopes) {
  const count = table.count;
  const out = new Array(count);
  for (let i = 0; i < count; i += 1) out[i] = {};
  const optional = new Set(table.optional || []);
  for (const [field, column] of Object.entries(table.columns)) {
    const decode = decoderFor(name, field, scopes);
    const values = columnValues(column, count);
    const skipNull = optional.has(field);
    for (let i = 0; i < count; i += 1) {
      const value = values[i];
      if (value === null && skipNull) continue;
      out[i][field] = decode ? decode(value) : value;
    }
  }
  for (const [field, byRow] of Object.entries(table.sparse || {})) {
    const decode = decoderFor(name, field, scopes);
    for (const [row, value] of Object.entries(byRow)) out[Number(row)][field] = decode ? decode(value) : value;
  }
  return out;
}

function columnValues(column, count) {
  if (Array.isArray(column)) return column;
  if (column.index) return column.index.map((i) => ownCopy(column.values[i]));
  const keys = Object.keys(column.columns);
  const values = new Array(count);
  for (let i = 0; i < count; i += 1) {
    const value = {};
    for (const key of keys) value[key] = column.columns[key][i];
    values[i] = value;
  }
  return values;
}

/** A coded value shared by many rows is copied (shallowly: coded values are flat), so that changing one row's
 *  never changes another's. */
function ownCopy(value) {
  if (Array.isArray(value)) return value.slice();
  return value !== null && typeof value === "object" ? { ...value } : value;
}

/** How a column's values become the expanded form's: scope indices to scopes, statistics arrays to objects. */
function decoderFor(name, field, scopes) {
  if (SCOPED[name]?.includes(field)) {
    return (value) => (Number.isInteger(value) ? scopes[value] : value);
  }
  if (WITH_STATISTICS[name]?.includes(field)) return statistics;
  return null;
}

function statistics(value) {
  if (!Array.isArray(value)) return value;
  const described = { min: value[0], max: value[1], mean: value[2], norm: value[3] };
  if (value.length > 4 && value[4] !== null) described.f16 = value[4];
  if (value.length > 5) Object.assign(described, value[5]);
  return described;
}

/** The graph the tape draws: a node per entry, a leaf per tensor no entry produced (first use first), an edge
 *  per entry input (backend/trace/document.py's graph_of). */
function graphOf(tape, tensors) {
  const byId = new Map(tensors.map((tensor) => [tensor.id, tensor]));
  const nodes = tape.map((entry) => ({ id: `e${entry.index}`, entry: entry.index, op: entry.op, family: entry.family,
    scope: entry.scope }));
  const leaves = new Map();
  const edges = [];
  for (const entry of tape) {
    for (const uid of entry.inputs) {
      const tensor = byId.get(uid);
      let source;
      if (tensor.produced_by === null || tensor.produced_by === undefined) {
        source = `t${uid}`;
        if (!leaves.has(uid)) leaves.set(uid, { id: source, tensor: uid, kind: tensor.kind, name: tensor.name });
      } else {
        source = `e${tensor.produced_by}`;
      }
      edges.push({ source, target: `e${entry.index}`, tensor: uid, nbytes: tensor.nbytes });
    }
  }
  return { nodes, leaves: [...leaves.values()], edges };
}
