// address.js — the workspace in the address bar: /?preset=deep-mlp#step=14&select=t7 (with &edited=1 once the model is
// edited from the preset) and /s/<id>#step=N are read on open (the rule for what wins is in explorer.js's start() and
// docs/sessions-and-snapshots.md); while a person steps, the address follows with history.replaceState (no history entry per step), at
// most once per ADDRESS_EVERY_MS: Chromium spends ~6 ms in each replaceState, a frame's budget, and a held arrow key or
// a scrub moves the cursor every frame.

/** {preset, edited, step, selected} from the address; absent parts are undefined. */
export function readAddress(location = window.location) {
  const hash = new URLSearchParams(location.hash.replace(/^#/, ""));
  const search = new URLSearchParams(location.search);
  const step = hash.has("step") && /^\d+$/.test(hash.get("step")) ? Number(hash.get("step")) : undefined;
  return { preset: search.get("preset") ?? undefined, edited: search.get("edited") === "1", step,
    selected: hash.has("select") ? hash.get("select") || null : undefined };
}

/** "?preset=deep-mlp" (with "&edited=1" when the model was edited from it), or "" for a model no preset names. */
export function modelQuery(model) {
  if (!model?.preset) return "";
  const query = new URLSearchParams({ preset: model.preset });
  if (model.edited) query.set("edited", "1");
  return `?${query}`;
}

/** The hash for a step and selection, e.g. "step=14&select=t7". */
export function stepHash(step, selected) {
  const hash = new URLSearchParams({ step: String(step) });
  if (selected) hash.set("select", selected);
  return hash.toString();
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

/** Replace the address with this step, selection and model (`{preset, edited}`, or null on a snapshot or a model no
 * preset names): a copied address opens the same model and step elsewhere. A change writes at once; changes within
 * ADDRESS_EVERY_MS of a write (playing, a held arrow key, a scrub) are gathered into one write when the wait ends. */
export function writeAddress(step, selected, model = null) {
  pending = `${window.location.pathname}${modelQuery(model)}#${stepHash(step, selected)}`;
  if (waiting) return;
  replaceAddress();
  waiting = setTimeout(gather, ADDRESS_EVERY_MS);
}

// Leaving (or reloading) during a wait keeps the last change.
window.addEventListener("pagehide", () => { if (pending) replaceAddress(); });
