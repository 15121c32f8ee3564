// trace-document.js — the one reader of trace documents: schema_version 2 (docs/trace.schema.json) decoded into
// the expanded records every view reads (docs/trace.v1.schema.json's layout). A schema_version 1 document, as
// snapshots stored before version 2 hold, already is that layout and passes as it is. The same decoding in
// Python is backend/trace/document_versions.py's unpack.

import { DERIVED, PACKED_ONLY, SCOPED, TABLES, WITH_STATISTICS } from "./trace-columns.js";   // generated: make schemas

/** The expanded form of a trace document of either version (anything else is returned as it came). */
export function readTrace(document) {
  if (!document || document.schema_version !== 2) return document;
  const expanded = {};
  for (const [key, value] of Object.entries(document)) {
    if (!TABLES.includes(key) && !PACKED_ONLY.includes(key) && key !== "graph") expanded[key] = value;
  }
  const scopes = document.scopes;
  const ops = document.ops || {};
  const tables = {};
  const storageOf = new Map();
  const derive = {        // a derived field's value in a row, by how the declaration derives it (undefined: none)
    row: (row, index) => index,
    storage: (row, index, source) => storageOf.get(row.storage)[source],
    op: (row, index, source) => (ops[row.op] || {})[source],
    entry: (row, index, source) => ownCopy(tables.tape[row.entry][source]),
    sum: (row, index, source) => Object.values(row[source]).reduce((sum, bytes) => sum + bytes, 0),
  };
  for (const name of TABLES) {      // in declared order: a table's derivations read only the tables before it
    const table = rows(name, document[name], scopes);
    tables[name] = table;
    for (const [field, [how, source]] of Object.entries(DERIVED[name] || {})) {
      table.forEach((row, index) => {
        if (field in row) return;
        const value = derive[how](row, index, source);
        if (value !== undefined) row[field] = value;
      });
    }
    if (name === "storages") for (const storage of table) storageOf.set(storage.id, storage);
  }
  return { ...expanded, ...tables, graph: document.graph || graphOf(tables.tape, tables.tensors) };
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
