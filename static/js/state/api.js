// api.js — every HTTP call a page makes: presets, traces, the session, snapshots and the ledger's figures. Trace
// documents are decoded here, where they arrive (trace-document.js), so the page holds one shape whatever version was
// sent.

import { readTrace } from "./trace-document.js";

const BUSY_RETRIES = 4;          // a busy engine (503 + Retry-After) is waited for this many times
const MAX_BUSY_WAIT_MS = 8000;   // at most this long each: the server's own deadline for a run

/** Resolve after `ms`, or reject with the AbortError when `signal` fires first. */
function pause(ms, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => { clearTimeout(timer); reject(new DOMException("Aborted", "AbortError")); }, { once: true });
  });
}

async function request(url, options = {}) {
  let response;
  for (let attempt = 0; ; attempt += 1) {
    response = await fetch(url, {
      credentials: "same-origin",
      headers: options.body ? { "Content-Type": "application/json" } : {},
      ...options,
    });
    const retryAfter = Number(response.headers.get("Retry-After"));
    if (response.status !== 503 || !retryAfter || attempt >= BUSY_RETRIES) break;
    await pause(Math.min(MAX_BUSY_WAIT_MS, 1000 * retryAfter), options.signal);   // the engine is running another trace
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(body.error || `${response.status} ${response.statusText}`);
    error.status = response.status;
    error.problems = body.problems || [];
    error.body = body;                      // the whole answer, e.g. a 413's cap, limit and requested
    error.retryAfter = Number(response.headers.get("Retry-After")) || null;     // seconds, when the server said
    throw error;
  }
  return body;
}

const post = (url, payload) => request(url, { method: "POST", body: JSON.stringify(payload) });

// Requests that run the engine leave this page one at a time: the server runs one trace per process and answers
// a second that cannot start within a second with 503, so a page racing itself would only meet its own busy engine.
let engineTail = Promise.resolve();
function onEngine(run) {
  const result = engineTail.then(run, run);
  engineTail = result.catch(() => {});
  return result;
}

export const fetchPresets = () => request("/api/presets");
/** GET /api/schema: the spec's fields (ranges that follow the caps, defaults, options, help) and the caps. */
export const fetchSchema = () => request("/api/schema");
/** POST /api/trace: the spec, and the checkpoint request when there is one ({"policy": "sqrt", ...}). */
export const traceSpec = (spec, signal, checkpoint = null) => onEngine(() =>
  request("/api/trace", { method: "POST", body: JSON.stringify(checkpoint ? { spec, checkpoint } : { spec }), signal })
    .then(readTrace));
/** POST /api/levers: every change that could lower this run's peak, executed by the engine and ranked. */
export const fetchLevers = (spec, checkpoint, signal) => onEngine(() =>
  request("/api/levers", { method: "POST", body: JSON.stringify(checkpoint ? { spec, checkpoint } : { spec }), signal }));
/** POST /api/modes: the model's Jacobians built by JVP and by VJP sweeps (executed, metered) and one JVP sweep stepped. */
export const fetchModes = (spec, element, signal) => onEngine(() =>
  request("/api/modes", { method: "POST", body: JSON.stringify({ spec, direction: { element } }), signal }));
/** POST /api/matrix-chain: both groupings' multiply-adds at these widths, and the chain executed at ≤ 64 wide. */
export const fetchMatrixChain = (widths, signal) => onEngine(() =>
  request("/api/matrix-chain", { method: "POST", body: JSON.stringify({ widths }), signal }));
export const fetchLedger = (query) => request(`/api/ledger?${query}`);

export const fetchSession = () => request("/api/session");
/** PUT /api/session: the whole workspace with the `version` it started from (409 with `current` when stale). */
export const saveSession = (document, { keepalive = false } = {}) =>
  request("/api/session", { method: "PUT", body: JSON.stringify(document), keepalive });
export const createSnapshot = (spec, view, checkpoint = null) => onEngine(() => post("/api/snapshots", { spec, checkpoint, view }));
/** POST /api/traces: a trace document recorded elsewhere, checked by the server and stored as a snapshot. */
export const postTrace = (document) => post("/api/traces", document);
/** GET /api/snapshots/<id>: its trace decoded (a run of many ranks comes as it is: the workspace reads each rank). */
export const fetchSnapshot = (id) => request(`/api/snapshots/${encodeURIComponent(id)}`)
  .then((snapshot) => ({ ...snapshot, trace: readTrace(snapshot.trace) }));
export const copySnapshot = (id) => post(`/api/snapshots/${encodeURIComponent(id)}/copy`, {});
