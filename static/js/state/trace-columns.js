// trace-columns.js — how schema_version 2 writes each table, read by trace-document.js. Generated from backend/trace/declaration.py by `python -m backend.trace.schemas` (make schemas): edit the declaration, not this file.
export const TABLES = ["storages", "tensors", "tape", "sweep", "steps"];
export const OP_TEXT = ["family", "backward", "why"];
export const SCOPED = { storages: ["scope"], tensors: ["scope"], tape: ["scope"] };
export const WITH_STATISTICS = { tensors: ["value"], sweep: ["adjoint"] };
