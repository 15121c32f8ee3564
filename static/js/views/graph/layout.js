// layout.js — lays a graph out: in the page while a graph is being opened (no frame is waiting, and a small layout
// costs less than a worker's start), otherwise in one long-lived Web Worker, so a fold, an unfold or the player
// entering a group re-lays out off the main thread and playing keeps its frames.
/* global tapescopeLayout */

let worker = null;
let nextId = 0;
const waiting = new Map();   // request id -> {resolve, reject}

function layoutWorker() {
  if (worker) return worker;
  worker = new Worker(new URL("./layout-worker.js", import.meta.url));   // beside this module, in its version
  worker.onmessage = (event) => {
    const { id, layout } = event.data;
    waiting.get(id)?.resolve(layout);
    waiting.delete(id);
  };
  worker.onerror = (event) => {
    for (const { reject } of waiting.values()) reject(new Error(event.message));
    waiting.clear();
    worker.terminate();
    worker = null;
  };
  return worker;
}

/** Past this many boxes a layout is left to right only (layout-core.js's linear-time layering). */
export const turnsMaxBoxes = () => tapescopeLayout.turnsMaxBoxes;

/** Start the worker (it loads dagre) before the first fold needs it. */
export function warmLayoutWorker() {
  if (typeof Worker === "function") layoutWorker();
}

function inWorker(boxes, edges, clusters, rankdir) {
  return new Promise((resolve, reject) => {
    const id = nextId++;
    waiting.set(id, { resolve, reject });
    layoutWorker().postMessage({ id, boxes, edges, clusters, rankdir });
  });
}

// The last few layouts, by what was laid out: a re-trace that leaves the drawing's boxes as they were (a new batch
// size, a policy that re-runs nothing, an undo, a policy tried and left) is drawn at once, not laid out again (~0.3 s
// for grad-accumulation's ~400 boxes unfolded under every_k=1: bench/layout.py).
const KEPT_LAYOUTS = 8;
const kept = new Map();     // JSON of the inputs -> layout, oldest first

function keep(key, layout) {
  kept.delete(key);
  kept.set(key, layout);
  if (kept.size > KEPT_LAYOUTS) kept.delete(kept.keys().next().value);
}

/** boxes: [{id, width, height, parent?}], edges: [{source, target}], clusters: [{id, parent?}] (layout-core.js)
 * -> {positions, routes, clusters, width, height, rankdir}. `rankdir`: "LR" (left to right) or "TB" (top to bottom);
 * `inPage`: lay out on the main thread (a graph being opened). Each caller gets its own copy. */
export async function layoutGraph(boxes, edges, clusters = [], { inPage = false, rankdir = "LR" } = {}) {
  const key = JSON.stringify([boxes, edges, clusters, rankdir]);
  let layout = kept.get(key);
  performance.mark(layout ? "tapescope:layout-kept" : "tapescope:layout-run");    // in DevTools' Performance panel
  if (!layout) layout = inPage ? tapescopeLayout(boxes, edges, clusters, rankdir) : await inWorker(boxes, edges, clusters, rankdir);
  keep(key, layout);
  return structuredClone(layout);
}
