// address.js — the workspace in the address bar: /?preset=deep-mlp#step=14&select=t7 and /s/<id>#step=N are read on
// open; while a person steps, the hash follows the cursor with history.replaceState (no history entry per step), at
// most once per ADDRESS_EVERY_MS while playing: Chromium spends ~6 ms in each replaceState, a frame's budget.

/** {preset, step, selected} from the address; absent parts are undefined. */
export function readAddress(location = window.location) {
  const hash = new URLSearchParams(location.hash.replace(/^#/, ""));
  const step = hash.has("step") && /^\d+$/.test(hash.get("step")) ? Number(hash.get("step")) : undefined;
  return { preset: new URLSearchParams(location.search).get("preset") ?? undefined, step,
    selected: hash.has("select") ? hash.get("select") || null : undefined };
}

/** The hash for a step and selection, e.g. "step=14&select=t7". */
export function stepHash(step, selected) {
  const hash = new URLSearchParams({ step: String(step) });
  if (selected) hash.set("select", selected);
  return hash.toString();
}

const ADDRESS_EVERY_MS = 250;
let pending = null;     // the address to write when the wait ends
let waiting = null;

function replaceAddress() {
  waiting = null;
  const url = pending;
  pending = null;
  if (url !== `${window.location.pathname}${window.location.search}${window.location.hash}`) history.replaceState(history.state, "", url);
}

/** Replace the address with this step and selection; a consumed ?preset= is dropped (a reload reopens the session).
 * With `coalesce` (playing), changes right after a write are gathered into one write ADDRESS_EVERY_MS later. */
export function writeAddress(step, selected, { coalesce = false } = {}) {
  pending = `${window.location.pathname}#${stepHash(step, selected)}`;
  if (waiting && coalesce) return;
  if (waiting) { clearTimeout(waiting); waiting = null; }
  replaceAddress();
  waiting = setTimeout(() => (pending ? replaceAddress() : (waiting = null)), ADDRESS_EVERY_MS);
}
