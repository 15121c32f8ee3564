// layout-worker.js — runs the dagre layout off the main thread for big graphs; answers one message per request.
/* global importScripts, tapescopeLayout */
importScripts("/static/vendor/dagre.min.js", "/static/js/layout-core.js");

self.onmessage = (event) => {
  const { boxes, edges, clusters } = event.data;
  self.postMessage(tapescopeLayout(boxes, edges, clusters));
};
