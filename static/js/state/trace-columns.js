// trace-columns.js — how schema_version 2 writes each table, read by trace-document.js. Generated from
// backend/trace/declaration.py by `python -m backend.trace.schemas` (make schemas): edit the declaration.
export const TABLES = ["storages", "tensors", "tape", "sweep", "steps"];
export const PACKED_ONLY = ["scopes", "ops"];
export const SCOPED = {
  storages: ["scope"],
  tensors: ["scope"],
  tape: ["scope"],
};
export const WITH_STATISTICS = {
  tensors: ["value"],
  sweep: ["adjoint"],
};
// per table, field: [how, the field it reads] (DERIVATIONS in backend/trace/declaration_types.py)
export const DERIVED = {
  tensors: { nbytes: ["storage", "nbytes"], address: ["storage", "address"] },
  tape: { index: ["row", null], family: ["op", "family"], backward: ["op", "backward"], why: ["op", "why"] },
  sweep: { op: ["entry", "op"], backward: ["entry", "backward"], reads: ["entry", "saved"], why: ["entry", "why"] },
  steps: { index: ["row", null], live_bytes: ["sum", "by_kind"] },
};
