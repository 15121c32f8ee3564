// layout-worker.js — runs the layout off the main thread; answers each request, tagged with its id, in turn.
/* global importScripts, tapescopeLayout */
importScripts("../../../vendor/dagre.min.js", "./network-simplex.js", "./crossing-order.js", "./layout-core.js");   // relative to this script: the page's version

self.onmessage = (event) => {
  const { id, boxes, edges, clusters, rankdir } = event.data;
  self.postMessage({ id, layout: tapescopeLayout(boxes, edges, clusters, rankdir) });
};
