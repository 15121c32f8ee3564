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
    throw error;
  }
  return body;
}

const post = (url, payload) => request(url, { method: "POST", body: JSON.stringify(payload) });

export const fetchPresets = () => request("/api/presets");
export const traceSpec = (spec, signal) =>
  request("/api/trace", { method: "POST", body: JSON.stringify({ spec }), signal });
export const fetchSession = () => request("/api/session");
export const createSnapshot = (spec, view) => post("/api/snapshots", { spec, view });
export const fetchSnapshot = (id) => request(`/api/snapshots/${encodeURIComponent(id)}`);
export const copySnapshot = (id) => post(`/api/snapshots/${encodeURIComponent(id)}/copy`, {});
