// layout.js — lays a graph out once: on the page for small graphs, in a Web Worker above WORKER_THRESHOLD nodes.
/* global tapescopeLayout */

export const WORKER_THRESHOLD = 40;    // a fold or unfold re-lays out: above this, off the main thread so playing keeps its frames

function inWorker(boxes, edges, clusters) {
  return new Promise((resolve, reject) => {
    const worker = new Worker("/static/js/layout-worker.js");
    worker.onmessage = (event) => { worker.terminate(); resolve(event.data); };
    worker.onerror = (event) => { worker.terminate(); reject(new Error(event.message)); };
    worker.postMessage({ boxes, edges, clusters });
  });
}

/** boxes: [{id, width, height, parent?}], edges: [{source, target}], clusters: [{id, parent?}] (layout-core.js)
 * -> {positions, routes, clusters, width, height}. `inPage`: no worker (a graph being opened, where a worker's start
 * costs more than the layout and no frame is waiting). */
export function layoutGraph(boxes, edges, clusters = [], { inPage = false } = {}) {
  if (boxes.length > WORKER_THRESHOLD && !inPage) return inWorker(boxes, edges, clusters);
  return Promise.resolve(tapescopeLayout(boxes, edges, clusters));
}
