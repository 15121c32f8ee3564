// address.js — the workspace in the address bar: /?preset=deep-mlp#step=14&select=t7 and /s/<id>#step=N are read on
// open; while a person steps, the hash follows the cursor with history.replaceState (no history entry per step).

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

/** Replace the address with this step and selection; a consumed ?preset= is dropped (a reload reopens the session). */
export function writeAddress(step, selected) {
  const url = `${window.location.pathname}#${stepHash(step, selected)}`;
  if (url !== `${window.location.pathname}${window.location.search}${window.location.hash}`) history.replaceState(history.state, "", url);
}
