// address.js — the workspace in the address bar: /?preset=deep-mlp#step=14&select=t7&view=1.5,-120,40 (the graph's
// zoom and pan: scale, x, y; with &edited=1 once the model is
// edited from the preset) and /s/<id>#step=N are read on open (the rule for what wins is in explorer.js's start() and
// docs/sessions-and-snapshots.md); while a person steps, the address follows with history.replaceState (no history entry per step), at
// most once per ADDRESS_EVERY_MS: Chromium spends ~6 ms in each replaceState, a frame's budget, and a held arrow key or
// a scrub moves the cursor every frame.

/** {preset, edited, step, selected, zoom, rank} from the address; absent (or malformed) parts are undefined. */
export function readAddress(location = window.location) {
  const hash = new URLSearchParams(location.hash.replace(/^#/, ""));
  const search = new URLSearchParams(location.search);
  const count = (name) => (hash.has(name) && /^\d+$/.test(hash.get(name)) ? Number(hash.get(name)) : undefined);
  return { preset: search.get("preset") ?? undefined, edited: search.get("edited") === "1", step: count("step"),
    selected: hash.has("select") ? hash.get("select") || null : undefined, zoom: readZoom(hash.get("view")),
    rank: count("rank") };
}

/** "1.5,-120,40" -> {k: 1.5, x: -120, y: 40}; undefined unless three finite numbers with a positive scale. */
function readZoom(text) {
  const parts = (text ?? "").split(",");
  if (parts.length !== 3 || parts.some((part) => !/^-?\d+(\.\d+)?$/.test(part))) return undefined;
  const [k, x, y] = parts.map(Number);
  return k > 0 ? { k, x, y } : undefined;
}

/** "?preset=deep-mlp" (with "&edited=1" when the model was edited from it), or "" for a model no preset names. */
export function modelQuery(model) {
  if (!model?.preset) return "";
  const query = new URLSearchParams({ preset: model.preset });
  if (model.edited) query.set("edited", "1");
  return `?${query}`;
}

/** The hash for a step, selection and zoom, e.g. "step=14&select=t7&view=1.5,-120,40" (the comma stays a comma);
 * in a run of many ranks the rank comes first: "rank=1&step=14". */
export function stepHash(step, selected, zoom = null, rank = null) {
  const hash = new URLSearchParams(Number.isInteger(rank) ? { rank: String(rank), step: String(step) } : { step: String(step) });
  if (selected) hash.set("select", selected);
  const view = zoom && [zoom.k, zoom.x, zoom.y].every(Number.isFinite)
    ? `&view=${Number(zoom.k.toFixed(3))},${Math.round(zoom.x)},${Math.round(zoom.y)}` : "";
  return hash.toString() + view;
}

const ADDRESS_EVERY_MS = 250;
let pending = null;     // the address to write when the wait ends
let waiting = null;     // the wait after a write, during which changes are gathered

function replaceAddress() {
  const url = pending;
  pending = null;
  if (url !== `${window.location.pathname}${window.location.search}${window.location.hash}`) history.replaceState(history.state, "", url);
}

/** After a write: the changes gathered meanwhile are written as one, and gathered again for as long as they come. */
function gather() {
  waiting = null;
  if (!pending) return;
  replaceAddress();
  waiting = setTimeout(gather, ADDRESS_EVERY_MS);
}

/** Replace the address with this step, selection, model (`{preset, edited}`, or null on a snapshot or a model no
 * preset names) and the graph's zoom: a copied address opens the same model, step and view elsewhere. A change writes
 * at once; changes within ADDRESS_EVERY_MS of a write (playing, a held arrow key, a scrub, a pan) are gathered into
 * one write when the wait ends. */
export function writeAddress(step, selected, model = null, zoom = null, rank = null) {
  pending = `${window.location.pathname}${modelQuery(model)}#${stepHash(step, selected, zoom, rank)}`;
  if (waiting) return;
  replaceAddress();
  waiting = setTimeout(gather, ADDRESS_EVERY_MS);
}

// Leaving (or reloading) during a wait keeps the last change.
window.addEventListener("pagehide", () => { if (pending) replaceAddress(); });
