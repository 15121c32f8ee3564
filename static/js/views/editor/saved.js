// The saved-bytes table, per top-level layer ("layers[i]"): the bytes the tape saves for backward (what no
// checkpointing would hold; each storage once), the activations this schedule still holds at its peak (from
// summary.peak.holders: under a checkpoint this column falls, and it sums to the activation part of the peak),
// and the saved bytes of the run before. Names are written as text, never HTML.
import { formatBytes, signedBytes } from "../../lib/format.js";
import { topLayer } from "../../model/trace-index.js";


/** Map "layers[i]" (or "loss") -> saved bytes, from tensors with a non-empty saved_by and a scope. */
export function savedByLayer(trace) {
  const totals = new Map();
  const seen = new Set();
  for (const tensor of trace?.tensors ?? []) {
    if (!tensor.saved_by?.length || !tensor.scope) continue;
    const storage = tensor.storage ?? `t${tensor.id}`;
    if (seen.has(storage)) continue;
    seen.add(storage);
    const key = topLayer(tensor.scope);
    totals.set(key, (totals.get(key) ?? 0) + tensor.nbytes);
  }
  return totals;
}

/** Map "layers[i]" -> the id of its largest saved tensor: what a click on the layer's row selects. */
function largestSavedByLayer(trace) {
  const largest = new Map();
  for (const tensor of trace?.tensors ?? []) {
    if (!tensor.saved_by?.length || !tensor.scope) continue;
    const key = topLayer(tensor.scope);
    if (!largest.has(key) || tensor.nbytes > largest.get(key).nbytes) largest.set(key, tensor);
  }
  return new Map([...largest].map(([key, tensor]) => [key, tensor.id]));
}

/** Map "layers[i]" -> activation bytes alive at the run's peak step (the storages summary.peak groups). */
export function heldAtPeak(trace) {
  const totals = new Map();
  for (const group of trace?.summary?.peak?.holders ?? []) {
    if (group.kind !== "activation") continue;
    const key = topLayer(group.scope);
    totals.set(key, (totals.get(key) ?? 0) + group.bytes);
  }
  return totals;
}

const sum = (map) => [...map.values()].reduce((a, b) => a + b, 0);
const layerOrder = (key) => Number(/^layers\[(\d+)\]$/.exec(key)?.[1] ?? Infinity);

function cell(row, text, className, bytes) {
  const td = row.insertCell();
  td.textContent = text;
  if (className) td.className = className;
  if (bytes !== undefined) td.dataset.bytes = String(bytes);
  return td;
}

/** Render (or re-render) the table into `table` for the traces `now` and `before` (either may be null). */
export function renderSavedTable(table, now, before) {
  const current = savedByLayer(now);
  const held = heldAtPeak(now);
  const largest = largestSavedByLayer(now);
  const previous = before ? savedByLayer(before) : null;
  const names = new Map((now?.layers ?? []).map((l) => [l.path, `${l.type}${l.name && l.name !== l.type ? ` “${l.name}”` : ""}`]));
  const layerPaths = [...(now?.layers ?? []), ...(before?.layers ?? [])].map((l) => l.path).filter((p) => /^layers\[\d+\]$/.test(p));
  const keys = [...new Set([...layerPaths, ...current.keys(), ...held.keys(), ...(previous?.keys() ?? [])])]
    .sort((a, b) => layerOrder(a) - layerOrder(b) || a.localeCompare(b));
  table.replaceChildren();
  const head = table.createTHead().insertRow();
  const titles = [["Layer", ""], ["Saved", "bytes the tape saves for backward in this layer (what no checkpointing holds)"],
    ["At peak", "activations of this layer still alive at this run's peak step"], ["Before", "saved, in the run before"],
    ["Change", ""]];
  for (const [title, help] of titles) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = title;
    if (help) th.title = help;
    head.append(th);
  }
  const body = table.createTBody();
  const addRow = (label, title, a, peak, b, extraClass) => {
    const row = body.insertRow();
    if (extraClass) row.className = extraClass;
    const head = cell(row, label, "layer");
    if (title) head.title = title;
    cell(row, formatBytes(a), "num now", a);
    cell(row, formatBytes(peak), "num held", peak);
    cell(row, b === undefined ? "—" : formatBytes(b), "num before", b);
    const delta = b === undefined ? 0 : a - b;
    cell(row, b === undefined || delta === 0 ? "" : signedBytes(delta), `num delta ${delta < 0 ? "down" : delta > 0 ? "up" : ""}`, delta);
    return row;
  };
  for (const key of keys) {
    const row = addRow(key, names.get(key), current.get(key) ?? 0, held.get(key) ?? 0, previous ? previous.get(key) ?? 0 : undefined,
      previous && (current.get(key) ?? 0) !== (previous.get(key) ?? 0) ? "changed" : "");
    row.dataset.layer = key;
    // A click selects the layer's largest saved tensor everywhere (explorer.js handles every [data-select]).
    if (largest.has(key)) { row.dataset.select = `t${largest.get(key)}`; row.title = `${row.title ? `${row.title} · ` : ""}click to select its largest saved tensor`; }
    const label = names.get(key);
    if (label) {
      const small = document.createElement("span");
      small.className = "layer-name";
      small.textContent = label;
      row.cells[0].append(" ", small);
    }
  }
  const total = addRow("total", "", sum(current), sum(held), previous ? sum(previous) : undefined, "total");
  total.dataset.testid = "saved-bytes-total";
}
