// api.js — every HTTP call the explorer makes: presets, traces, the session and snapshots.

async function request(url, options = {}) {
  const response = await fetch(url, {
    credentials: "same-origin",
    headers: options.body ? { "Content-Type": "application/json" } : {},
    ...options,
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(body.error || `${response.status} ${response.statusText}`);
    error.status = response.status;
    error.problems = body.problems || [];
    error.body = body;                      // the whole answer, e.g. a 413's cap, limit and requested
    throw error;
  }
  return body;
}

const post = (url, payload) => request(url, { method: "POST", body: JSON.stringify(payload) });

export const fetchPresets = () => request("/api/presets");
/** POST /api/trace: the spec, and the checkpoint request when there is one ({"policy": "sqrt", ...}). */
export const traceSpec = (spec, signal, checkpoint = null) =>
  request("/api/trace", { method: "POST", body: JSON.stringify(checkpoint ? { spec, checkpoint } : { spec }), signal });
/** POST /api/levers: every change that could lower this run's peak, executed by the engine and ranked. */
export const fetchLevers = (spec, checkpoint, signal) =>
  request("/api/levers", { method: "POST", body: JSON.stringify(checkpoint ? { spec, checkpoint } : { spec }), signal });
export const fetchSession = () => request("/api/session");
/** PUT /api/session: the whole workspace with the `version` it started from (409 with `current` when stale). */
export const saveSession = (document, { keepalive = false } = {}) =>
  request("/api/session", { method: "PUT", body: JSON.stringify(document), keepalive });
export const createSnapshot = (spec, view, checkpoint = null) => post("/api/snapshots", { spec, checkpoint, view });
export const fetchSnapshot = (id) => request(`/api/snapshots/${encodeURIComponent(id)}`);
export const copySnapshot = (id) => post(`/api/snapshots/${encodeURIComponent(id)}/copy`, {});
