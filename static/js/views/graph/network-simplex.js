// network-simplex.js — the ranks of a layered layout: dagre's own network simplex (Gansner et al., "A Technique for
// Drawing Directed Graphs", 1993, section 2), step for step, on integer-indexed arrays instead of graphlib's
// string-keyed objects. dagre's version asks graphlib for every neighbour list, edge label and descendant test afresh
// and re-derives every cut value after each exchange; on an unfolded grad-accumulation trace (~400 boxes, 54 groups)
// that was 2 s of a 3 s layout. This one makes the same choices in the same order (the first tree edge with a negative
// cut value leaves; the first edge of least slack across the cut enters; ties as dagre breaks them), so the ranks, and
// so the drawing, are dagre's: tests/e2e/test_layout_as_dagre.py compares the two in the page.
// Classic script (layout-worker.js loads it with importScripts): defines self.tapescopeNetworkSimplex, a dagre
// `ranker` (dagre calls it with its non-compound layout graph and reads each node label's `rank`).
(function defineNetworkSimplex(scope) {
  /** graphlib's undirected graph keeps each edge as (lesser id, greater id); a node's neighbours are listed as its
   * lesser ones, then its greater ones, each in the order the edges were added. */
  class Tree {
    constructor(n, before) {
      this.before = before;                      // before(a, b): id a sorts before id b (JavaScript string order)
      this.lesser = Array.from({ length: n }, () => []);
      this.greater = Array.from({ length: n }, () => []);
      this.edges = [];                           // [a, b] with a before b, in the order added
      this.cut = new Map();                      // a * n + b -> cut value
      this.n = n;
    }

    key(a, b) { return this.before(a, b) ? a * this.n + b : b * this.n + a; }

    add(a, b) {
      const [low, high] = this.before(a, b) ? [a, b] : [b, a];
      this.edges.push([low, high]);
      this.cut.set(low * this.n + high, 0);
      this.greater[low].push(high);
      this.lesser[high].push(low);
    }

    remove(a, b) {
      const [low, high] = this.before(a, b) ? [a, b] : [b, a];
      this.edges.splice(this.edges.findIndex(([x, y]) => x === low && y === high), 1);
      this.cut.delete(low * this.n + high);
      this.greater[low].splice(this.greater[low].indexOf(high), 1);
      this.lesser[high].splice(this.lesser[high].indexOf(low), 1);
    }

    neighbours(v) { return this.lesser[v].concat(this.greater[v]); }
  }

  scope.tapescopeNetworkSimplex = function networkSimplex(graph) {
    const ids = graph.nodes();
    const n = ids.length;
    if (n === 0) return;
    const index = new Map(ids.map((id, i) => [id, i]));
    const labels = ids.map((id) => graph.node(id));
    const sorted = ids.map((id, i) => i).sort((a, b) => (ids[a] < ids[b] ? -1 : ids[a] > ids[b] ? 1 : 0));
    const order = new Int32Array(n);
    sorted.forEach((i, position) => { order[i] = position; });
    const before = (a, b) => order[a] < order[b];

    // dagre's simplify(): parallel edges become one, weights added, the longest minlen (at least 1) kept
    const tail = [], head = [], weight = [], minlen = [];
    const edgeOf = new Map();                    // v * n + w -> edge index
    for (const e of graph.edges()) {
      const v = index.get(e.v), w = index.get(e.w), label = graph.edge(e);
      let i = edgeOf.get(v * n + w);
      if (i === undefined) {
        i = tail.length;
        edgeOf.set(v * n + w, i);
        tail.push(v); head.push(w); weight.push(0); minlen.push(1);
      }
      weight[i] += label.weight;
      minlen[i] = Math.max(minlen[i], label.minlen);
    }
    const m = tail.length;
    const into = Array.from({ length: n }, () => []);
    const out = Array.from({ length: n }, () => []);
    for (let i = 0; i < m; i += 1) { out[tail[i]].push(i); into[head[i]].push(i); }
    const incident = into.map((edges, v) => edges.concat(out[v]));        // graphlib's nodeEdges: in, then out
    const rank = new Float64Array(n);
    const slack = (i) => rank[head[i]] - rank[tail[i]] - minlen[i];

    // longest path from the sources: a node's rank is the least of (its successor's - minlen), 0 for a sink
    const ranked = new Uint8Array(n);
    const longestPath = (v) => {
      if (ranked[v]) return rank[v];
      ranked[v] = 1;
      let least = Infinity;
      for (const i of out[v]) least = Math.min(least, longestPath(head[i]) - minlen[i]);
      rank[v] = least === Infinity ? 0 : least;
      return rank[v];
    };
    for (let v = 0; v < n; v += 1) if (into[v].length === 0) longestPath(v);

    // a feasible tree: grown from the first node along tight edges, the tree shifted by the least slack across
    const tree = new Tree(n, before);
    const inTree = new Uint8Array(n);
    const treeNodes = [0];
    inTree[0] = 1;
    const growTight = (v) => {
      for (const i of incident[v]) {
        const w = tail[i] === v ? head[i] : tail[i];
        if (!inTree[w] && slack(i) === 0) {
          inTree[w] = 1;
          treeNodes.push(w);
          tree.add(v, w);
          growTight(w);
        }
      }
    };
    for (;;) {
      for (const v of treeNodes.slice()) growTight(v);
      if (treeNodes.length >= n) break;
      let best = -1, bestSlack = Infinity;
      for (let i = 0; i < m; i += 1) {
        if (inTree[tail[i]] !== inTree[head[i]] && slack(i) < bestSlack) { best = i; bestSlack = slack(i); }
      }
      if (best < 0) break;
      const delta = inTree[tail[best]] ? bestSlack : -bestSlack;
      for (const v of treeNodes) rank[v] += delta;
    }

    // low/lim numbering and parents from a depth-first walk of the tree from its first node
    const low = new Int32Array(n), lim = new Int32Array(n), parent = new Int32Array(n);
    const walk = [];                             // the nodes in the walk's post-order
    const lowLim = () => {
      const visited = new Uint8Array(n);
      let next = 1;
      walk.length = 0;
      const visit = (v, from) => {
        const first = next;
        visited[v] = 1;
        for (const w of tree.neighbours(v)) if (!visited[w]) visit(w, v);
        low[v] = first;
        lim[v] = next;
        next += 1;
        parent[v] = from;
        walk.push(v);
      };
      visit(treeNodes[0], -1);
    };
    const graphEdge = (v, w) => edgeOf.get(v * n + w);
    const cutValues = () => {
      for (const child of walk) {
        const up = parent[child];
        if (up < 0) continue;
        let edge = graphEdge(child, up);
        const childIsTail = edge !== undefined;
        if (!childIsTail) edge = graphEdge(up, child);
        let cut = weight[edge];
        for (const i of incident[child]) {
          const isOut = tail[i] === child;
          const other = isOut ? head[i] : tail[i];
          if (other === up) continue;
          const towardsHead = isOut === childIsTail;
          cut += towardsHead ? weight[i] : -weight[i];
          const key = tree.key(child, other);
          if (tree.cut.has(key)) cut += towardsHead ? -tree.cut.get(key) : tree.cut.get(key);
        }
        tree.cut.set(tree.key(child, up), cut);
      }
    };
    const isDescendant = (v, root) => low[root] <= lim[v] && lim[v] <= lim[root];

    lowLim();
    cutValues();
    for (;;) {
      const leaving = tree.edges.find(([a, b]) => tree.cut.get(a * n + b) < 0);
      if (!leaving) break;
      let [v, w] = leaving;
      if (graphEdge(v, w) === undefined) [v, w] = [w, v];
      const flip = lim[v] > lim[w];
      const root = flip ? w : v;
      let entering = -1;
      for (let i = 0; i < m; i += 1) {
        if (flip === isDescendant(tail[i], root) && flip !== isDescendant(head[i], root)
            && (entering < 0 || slack(i) < slack(entering))) entering = i;
      }
      tree.remove(leaving[0], leaving[1]);
      tree.add(tail[entering], head[entering]);
      lowLim();
      cutValues();
      // ranks follow the tree down from its root: each node minlen from its parent
      for (let k = walk.length - 2; k >= 0; k -= 1) {
        const node = walk[k];
        const up = parent[node];
        const down = graphEdge(node, up);
        rank[node] = down !== undefined ? rank[up] - minlen[down] : rank[up] + minlen[graphEdge(up, node)];
      }
    }
    labels.forEach((label, v) => { label.rank = rank[v]; });
  };
}(self));
