// layout-worker.js — runs the layout off the main thread; answers each request, tagged with its id, in turn.
/* global importScripts, tapescopeLayout */
importScripts("/static/vendor/dagre.min.js", "/static/js/views/graph/layout-core.js");

self.onmessage = (event) => {
  const { id, boxes, edges, clusters, rankdir } = event.data;
  self.postMessage({ id, layout: tapescopeLayout(boxes, edges, clusters, rankdir) });
};
