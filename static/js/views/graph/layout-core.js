// layout-core.js — the one layered layout of a trace graph, shared by the page and layout-worker.js: left to right
// ("LR"), or top to bottom ("TB") for a panel taller than the drawing is wide (views/graph/fold.js picks).
// Classic script (no modules in importScripts): defines self.tapescopeLayout. dagre for graphs up to
// DAGRE_MAX_NODES; above that dagre takes seconds and overflows its recursion on long chains, so a linear-time
// longest-path layering with one barycenter ordering pass takes over.
/* global dagre */   // and tapescopeNetworkSimplex, tapescopeCrossingOrder: network-simplex.js, crossing-order.js, loaded first
(function defineLayout(scope) {
  const DAGRE_MAX_NODES = 500;
  // Between ranks, room for an edge to bend; across them (top to bottom), for the byte badge over a node and the state
  // line under a folded group.
  const SPACING = { LR: { nodesep: 14, ranksep: 34 }, TB: { nodesep: 10, ranksep: 26 }, margin: 14 };

  function withDagre(boxes, edges, clusters, rankdir) {
    const graph = new dagre.graphlib.Graph({ multigraph: true, compound: clusters.length > 0 });
    // dagre's own ranks, worked out by network-simplex.js (the same steps without graphlib's costs)
    graph.setGraph({ rankdir, ...SPACING[rankdir], edgesep: 6, marginx: SPACING.margin, marginy: SPACING.margin,
      ranker: scope.tapescopeNetworkSimplex });
    graph.setDefaultEdgeLabel(() => ({}));
    for (const box of boxes) graph.setNode(box.id, { width: box.width, height: box.height });
    // Unfolded groups are dagre clusters: their members are kept together, inside a box around them.
    for (const cluster of clusters) {
      graph.setNode(cluster.id, {});
      if (cluster.parent) graph.setParent(cluster.id, cluster.parent);
    }
    for (const box of boxes) if (box.parent) graph.setParent(box.id, box.parent);
    // An edge's optional weight (default 1) asks dagre to keep it short and straight: the forward chain's edges
    // outweigh the dotted links that hang a recomputed region off its checkpoint.
    edges.forEach((edge, i) => graph.setEdge(edge.source, edge.target, { weight: edge.weight ?? 1 }, String(i)));
    // dagre's own order within each rank, worked out by crossing-order.js (the same steps without graphlib's costs)
    dagre.layout(graph, { customOrder: scope.tapescopeCrossingOrder });
    const positions = {};
    for (const box of boxes) {
      const node = graph.node(box.id);
      positions[box.id] = { x: node.x, y: node.y };
    }
    const routes = edges.map((edge, i) => graph.edge(edge.source, edge.target, String(i)).points);
    const size = graph.graph();
    const clusterBoxes = {};
    for (const cluster of clusters) {
      const node = graph.node(cluster.id);
      if (node && node.width) clusterBoxes[cluster.id] = { x: node.x, y: node.y, width: node.width, height: node.height };
    }
    return { positions, routes, clusters: clusterBoxes, width: size.width, height: size.height, rankdir };
  }

  /** Without dagre's clusters, a group's box is the bounding box of its members (they may interleave with others). */
  function boundingClusters(boxes, positions, clusters) {
    const bounds = {};
    const parentOf = new Map(clusters.map((c) => [c.id, c.parent]));
    for (const box of boxes) {
      const { x, y } = positions[box.id];
      for (let id = box.parent; id; id = parentOf.get(id)) {
        const b = (bounds[id] ||= { x0: Infinity, y0: Infinity, x1: -Infinity, y1: -Infinity });
        b.x0 = Math.min(b.x0, x - box.width / 2 - 8); b.x1 = Math.max(b.x1, x + box.width / 2 + 8);
        b.y0 = Math.min(b.y0, y - box.height / 2 - 8); b.y1 = Math.max(b.y1, y + box.height / 2 + 8);
      }
    }
    const out = {};
    for (const [id, b] of Object.entries(bounds)) out[id] = { x: (b.x0 + b.x1) / 2, y: (b.y0 + b.y1) / 2, width: b.x1 - b.x0, height: b.y1 - b.y0 };
    return out;
  }

  /** Ranks by longest path from the sources; a source sits one rank before its first consumer. */
  function ranks(boxes, edges) {
    const outgoing = new Map(boxes.map((b) => [b.id, []]));
    const indegree = new Map(boxes.map((b) => [b.id, 0]));
    for (const edge of edges) { outgoing.get(edge.source).push(edge.target); indegree.set(edge.target, indegree.get(edge.target) + 1); }
    const rank = new Map(boxes.map((b) => [b.id, 0]));
    const queue = boxes.filter((b) => indegree.get(b.id) === 0).map((b) => b.id);
    const sources = new Set(queue);
    for (let head = 0; head < queue.length; head += 1) {
      const id = queue[head];
      for (const next of outgoing.get(id)) {
        if (!sources.has(id)) rank.set(next, Math.max(rank.get(next), rank.get(id) + 1));
        else rank.set(next, Math.max(rank.get(next), 1));
        indegree.set(next, indegree.get(next) - 1);
        if (indegree.get(next) === 0) queue.push(next);
      }
    }
    for (const id of sources) {
      const consumers = outgoing.get(id).map((next) => rank.get(next));
      if (consumers.length) rank.set(id, Math.min(...consumers) - 1);
    }
    return rank;
  }

  function layered(boxes, edges) {
    const rank = ranks(boxes, edges);
    const byRank = [];
    for (const box of boxes) (byRank[rank.get(box.id)] ||= []).push(box);
    const incoming = new Map(boxes.map((b) => [b.id, []]));
    for (const edge of edges) incoming.get(edge.target).push(edge.source);
    const order = new Map();
    const positions = {};
    let x = SPACING.margin;
    let height = 0;
    for (const column of byRank) {
      if (!column) continue;
      const barycenter = (box) => {
        const from = incoming.get(box.id).filter((id) => order.has(id));
        return from.length ? from.reduce((sum, id) => sum + order.get(id), 0) / from.length : 0;
      };
      column.sort((a, b) => barycenter(a) - barycenter(b));
      const width = Math.max(...column.map((b) => b.width));
      let y = SPACING.margin;
      column.forEach((box, i) => {
        order.set(box.id, i);
        positions[box.id] = { x: x + width / 2, y: y + box.height / 2 };
        y += box.height + SPACING.LR.nodesep;
      });
      height = Math.max(height, y);
      x += width + SPACING.LR.ranksep;
    }
    const half = new Map(boxes.map((b) => [b.id, b.width / 2]));
    const routes = edges.map((edge) => {
      const from = positions[edge.source];
      const to = positions[edge.target];
      const start = { x: from.x + half.get(edge.source), y: from.y };
      const end = { x: to.x - half.get(edge.target), y: to.y };
      return [start, { x: (start.x + end.x) / 2, y: (start.y + end.y) / 2 }, end];
    });
    return { positions, routes, width: x + SPACING.margin, height: height + SPACING.margin, rankdir: "LR" };
  }

  /** boxes: [{id, width, height, parent?}], edges: [{source, target, weight?}], clusters: [{id, parent?}] (unfolded
   * groups), rankdir "LR" or "TB" -> {positions, routes, clusters: {id: {x, y, width, height}}, width, height, rankdir}.
   * Past DAGRE_MAX_NODES the layout is always left to right (its rankdir says so). */
  scope.tapescopeLayout = function tapescopeLayout(boxes, edges, clusters = [], rankdir = "LR") {
    if (boxes.length <= DAGRE_MAX_NODES) return withDagre(boxes, edges, clusters, rankdir === "TB" ? "TB" : "LR");
    const layout = layered(boxes, edges);
    return { ...layout, clusters: boundingClusters(boxes, layout.positions, clusters) };
  };
  scope.tapescopeLayout.turnsMaxBoxes = DAGRE_MAX_NODES;   // past this, top to bottom is not on offer
}(self));
