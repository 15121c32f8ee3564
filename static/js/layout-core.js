// layout-core.js — the one dagre layout of a trace graph, shared by the page and layout-worker.js (classic script: defines self.tapescopeLayout).
/* global dagre */
self.tapescopeLayout = function tapescopeLayout(boxes, edges) {
  const graph = new dagre.graphlib.Graph({ multigraph: true });
  graph.setGraph({ rankdir: "LR", nodesep: 14, ranksep: 46, edgesep: 6, marginx: 20, marginy: 20 });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const box of boxes) graph.setNode(box.id, { width: box.width, height: box.height });
  edges.forEach((edge, i) => graph.setEdge(edge.source, edge.target, {}, String(i)));
  dagre.layout(graph);
  const positions = {};
  for (const box of boxes) {
    const node = graph.node(box.id);
    positions[box.id] = { x: node.x, y: node.y };
  }
  const routes = edges.map((edge, i) => graph.edge(edge.source, edge.target, String(i)).points);
  const size = graph.graph();
  return { positions, routes, width: size.width, height: size.height };
};
