// crossing-order.js — the order of the boxes within each rank of a layered layout: dagre's own crossing reduction
// (layer-by-layer barycenter sweeps, groups kept together, the best of the sweeps by weighted crossings; Gansner et
// al. 1993, section 3, as dagre's lib/order does it), step for step on Maps and arrays instead of one graphlib graph
// per rank. dagre builds ~2 graphs per rank and asks them for children, in-edges and labels afresh on every sweep;
// this makes the same choices in the same order (the same barycenters, conflicts resolved as dagre resolves them,
// ties broken by the same bias), so the order, and so the drawing, are dagre's: tests/e2e/test_layout_as_dagre.py
// compares the two in the page. Classic script: defines self.tapescopeCrossingOrder, a dagre `customOrder` (dagre
// calls it with its layout graph; it writes each node label's `order`).
(function defineCrossingOrder(scope) {
  const ROOT = "\u0000root";                  // no id of dagre's or ours

  /** One rank's nodes as dagre's buildLayerGraph makes them: the rank's nodes under their groups (a group spanning
   * the rank stands for its members there, with that rank's border nodes), each with the edges from its neighbours on
   * the side the sweep comes from, weights of parallel edges added. */
  function layerGraph(graph, rank, nodes, relationship) {
    const parent = new Map();                  // id -> parent id (undefined: dagre's invisible top)
    const children = new Map([[undefined, []]]);
    const label = new Map();
    const inEdges = new Map();                 // id -> [{u, weight}] in the order first added
    const ensure = (v) => {
      if (label.has(v)) return;
      label.set(v, graph.node(v));
      parent.set(v, undefined);
      children.set(v, []);
      children.get(undefined).push(v);
      inEdges.set(v, []);
    };
    const setParent = (v, p) => {
      ensure(p);
      const siblings = children.get(parent.get(v));
      siblings.splice(siblings.indexOf(v), 1);
      parent.set(v, p);
      children.get(p).push(v);
    };
    for (const v of nodes) {
      const node = graph.node(v);
      ensure(v);
      setParent(v, graph.parent(v) || ROOT);
      for (const e of graph[relationship](v) || []) {
        const u = e.v === v ? e.w : e.v;
        ensure(u);
        const edges = inEdges.get(v);
        const known = edges.find((edge) => edge.u === u);
        if (known) known.weight += graph.edge(e).weight;
        else edges.push({ u, weight: graph.edge(e).weight });
      }
      if (Object.hasOwn(node, "minRank")) label.set(v, { borderLeft: node.borderLeft[rank], borderRight: node.borderRight[rank] });
    }
    return { parent, children, label, inEdges };
  }

  function barycenters(lg, movable) {
    return movable.map((v) => {
      const edges = lg.inEdges.get(v);
      if (!edges.length) return { v };
      let sum = 0, weight = 0;
      for (const { u, weight: w } of edges) { sum += w * lg.label.get(u).order; weight += w; }
      return { v, barycenter: sum / weight, weight };
    });
  }

  /** dagre's resolveConflicts: entries whose order the constraints (groups seen earlier in the sweep) contradict are
   * merged, barycenters weighted. */
  function resolveConflicts(entries, constraints) {
    const mapped = new Map();
    entries.forEach((entry, i) => {
      const tmp = { indegree: 0, in: [], out: [], vs: [entry.v], i };
      if (entry.barycenter !== undefined) { tmp.barycenter = entry.barycenter; tmp.weight = entry.weight; }
      mapped.set(entry.v, tmp);
    });
    for (const [v, w] of constraints.edges) {
      const entryV = mapped.get(v), entryW = mapped.get(w);
      if (entryV !== undefined && entryW !== undefined) { entryW.indegree += 1; entryV.out.push(entryW); }
    }
    const sources = [...mapped.values()].filter((entry) => !entry.indegree);
    const done = [];
    while (sources.length) {
      const entry = sources.pop();
      done.push(entry);
      for (const u of entry.in.reverse()) {
        if (u.merged) continue;
        if (u.barycenter === undefined || entry.barycenter === undefined || u.barycenter >= entry.barycenter) merge(entry, u);
      }
      for (const w of entry.out) {
        w.in.push(entry);
        if (--w.indegree === 0) sources.push(w);
      }
    }
    return done.filter((entry) => !entry.merged).map(({ vs, i, barycenter, weight }) => {
      const kept = { vs, i };
      if (barycenter !== undefined) kept.barycenter = barycenter;
      if (weight !== undefined) kept.weight = weight;
      return kept;
    });
  }

  function merge(target, source) {
    let sum = 0, weight = 0;
    if (target.weight) { sum += target.barycenter * target.weight; weight += target.weight; }
    if (source.weight) { sum += source.barycenter * source.weight; weight += source.weight; }
    target.vs = source.vs.concat(target.vs);
    target.barycenter = sum / weight;
    target.weight = weight;
    target.i = Math.min(source.i, target.i);
    source.merged = true;
  }

  function sortEntries(entries, reversedPairs, biasRight) {
    const sortable = entries.filter((entry) => Object.hasOwn(entry, "barycenter"));
    const unsortable = entries.filter((entry) => !Object.hasOwn(entry, "barycenter")).sort((a, b) => b.i - a.i);
    const vs = [];
    let sum = 0, weight = 0, index = 0;
    sortable.sort((a, b) => {
      if (a.barycenter < b.barycenter) return -1;
      if (a.barycenter > b.barycenter) return 1;
      return !biasRight ? a.i - b.i : b.i - a.i;
    });
    for (const [key, value] of reversedPairs) {
      sortable.splice(sortable.findIndex((entry) => entry.vs[0] === key) + 1, 0, value);
    }
    const consume = () => {
      let last;
      while (unsortable.length && (last = unsortable[unsortable.length - 1]).i <= index) {
        unsortable.pop();
        vs.push(last.vs);
        index += 1;
      }
    };
    consume();
    for (const entry of sortable) {
      index += entry.vs.length;
      vs.push(entry.vs);
      sum += entry.barycenter * entry.weight;
      weight += entry.weight;
      consume();
    }
    const result = { vs: vs.flat(1) };
    if (weight) { result.barycenter = sum / weight; result.weight = weight; }
    return result;
  }

  function sortSubgraph(lg, v, constraints, biasRight) {
    let movable = lg.children.get(v) || [];          // a rank with no nodes has no root
    const node = lg.label.get(v);
    const bl = node ? node.borderLeft : undefined;
    const br = node ? node.borderRight : undefined;
    const subgraphs = new Map();
    if (bl) movable = movable.filter((w) => w !== bl && w !== br);
    const entries0 = barycenters(lg, movable);
    for (const entry of entries0) {
      if (lg.children.get(entry.v).length) {
        const sub = sortSubgraph(lg, entry.v, constraints, biasRight);
        subgraphs.set(entry.v, sub);
        if (Object.hasOwn(sub, "barycenter")) {
          if (entry.barycenter !== undefined) {
            entry.barycenter = (entry.barycenter * entry.weight + sub.barycenter * sub.weight) / (entry.weight + sub.weight);
            entry.weight += sub.weight;
          } else {
            entry.barycenter = sub.barycenter;
            entry.weight = sub.weight;
          }
        }
      }
    }
    const entries = resolveConflicts(entries0, constraints);
    for (const entry of entries) entry.vs = entry.vs.flatMap((w) => (subgraphs.has(w) ? subgraphs.get(w).vs : w));
    const reversedPairs = new Map();
    let usedBias = false;
    for (let i = 0; i < entries.length; i++) {
      for (let j = i + 1; j < entries.length; j++) {
        if (!entries[i] || !entries[j] || !entries[i].barycenter || !entries[j].barycenter) continue;
        if (entries[i].barycenter === entries[j].barycenter) {
          const nameI = entries[i].vs[0] ?? "", nameJ = entries[j].vs[0] ?? "";
          const nodeI = lg.label.get(nameI), nodeJ = lg.label.get(nameJ);
          if (nodeI.dummy === "edge" && nodeJ.dummy === "edge" && nodeI.edgeObj?.v === nodeJ.edgeObj?.v
              && nodeI.edgeObj?.w === nodeJ.edgeObj?.w) {
            if (nodeI.edgeLabel.reversed) {
              reversedPairs.set(nameJ, entries[i]);
              entries.splice(i, 1);
              i--;
              break;
            } else if (!reversedPairs.has(nameI)) {
              reversedPairs.set(nameI, entries[j]);
              entries.splice(j, 1);
              j--;
            }
          } else {
            usedBias = true;
          }
        }
      }
    }
    const result = sortEntries(entries, reversedPairs, biasRight);
    if (bl && br) {
      result.vs = [bl, result.vs, br].flat(1);
      const blPred = lg.inEdges.get(bl)[0];
      if (blPred) {
        const brPred = lg.inEdges.get(br)[0];
        if (!Object.hasOwn(result, "barycenter")) { result.barycenter = 0; result.weight = 0; }
        result.barycenter = (result.barycenter * result.weight + lg.label.get(blPred.u).order
          + lg.label.get(brPred.u).order) / (result.weight + 2);
        result.weight += 2;
      }
    }
    result.usedBias = usedBias;
    return result;
  }

  /** dagre's addSubgraphConstraints: a group met after another under the same parent stays after it in later ranks. */
  function addConstraints(lg, constraints, vs) {
    const prev = new Map();
    let rootPrev;
    for (const v of vs) {
      let child = lg.parent.get(v);
      while (child) {
        const parent = lg.parent.get(child);
        let prevChild;
        if (parent) { prevChild = prev.get(parent); prev.set(parent, child); } else { prevChild = rootPrev; rootPrev = child; }
        if (prevChild && prevChild !== child) {
          const key = `${prevChild}\u0001${child}`;
          if (!constraints.keys.has(key)) { constraints.keys.add(key); constraints.edges.push([prevChild, child]); }
          break;
        }
        child = parent;
      }
    }
  }

  function layerMatrix(graph, ids) {
    const layering = [];
    for (const v of ids) {
      const node = graph.node(v);
      if (node.rank !== undefined) (layering[node.rank] ||= [])[node.order] = v;
    }
    for (let r = 0; r < layering.length; r += 1) layering[r] ||= [];
    return layering;
  }

  function crossings(graph, layering) {
    let total = 0;
    for (let i = 1; i < layering.length; i += 1) {
      const north = layering[i - 1], south = layering[i];
      const southPos = new Map();
      south.forEach((v, k) => southPos.set(v, k));           // a layer may have holes: they are skipped
      const entries = north.flatMap((v) => (graph.outEdges(v) || [])
        .map((e) => ({ pos: southPos.get(e.w), weight: graph.edge(e).weight })).sort((a, b) => a.pos - b.pos));
      let first = 1;
      while (first < south.length) first <<= 1;
      const tree = new Array(2 * first - 1).fill(0);
      first -= 1;
      for (const { pos, weight } of entries) {
        let index = pos + first;
        tree[index] += weight;
        let sum = 0;
        while (index > 0) {
          if (index % 2) sum += tree[index + 1];
          index = (index - 1) >> 1;
          tree[index] += weight;
        }
        total += weight * sum;
      }
    }
    return total;
  }

  scope.tapescopeCrossingOrder = function crossingOrder(graph) {
    const ids = graph.nodes();
    let maxRank = -Infinity;
    for (const v of ids) { const r = graph.node(v).rank; maxRank = Math.max(maxRank, r === undefined ? Number.MIN_VALUE : r); }
    const byRank = new Map();
    const addTo = (r, v) => { if (!byRank.has(r)) byRank.set(r, []); byRank.get(r).push(v); };
    for (const v of ids) {
      const node = graph.node(v);
      if (typeof node.rank === "number") addTo(node.rank, v);
      if (typeof node.minRank === "number" && typeof node.maxRank === "number") {
        for (let r = node.minRank; r <= node.maxRank; r++) if (r !== node.rank) addTo(r, v);
      }
    }
    const down = [], up = [];
    for (let r = 1; r <= maxRank; r += 1) down.push(layerGraph(graph, r, byRank.get(r) || [], "inEdges"));
    for (let r = maxRank - 1; r >= 0; r -= 1) up.push(layerGraph(graph, r, byRank.get(r) || [], "outEdges"));

    // dagre's initOrder: a depth-first walk from the simple nodes by rank, successors in the graph's order
    const simple = ids.filter((v) => !graph.children(v).length);
    let top = -Infinity;
    for (const v of simple) top = Math.max(top, graph.node(v).rank);
    const layers = Array.from({ length: top + 1 }, () => []);
    const visited = new Set();
    const walk = (v) => {
      if (visited.has(v)) return;
      visited.add(v);
      layers[graph.node(v).rank].push(v);
      for (const w of graph.successors(v) || []) walk(w);
    };
    simple.slice().sort((a, b) => graph.node(a).rank - graph.node(b).rank).forEach(walk);
    const assign = (layering) => Object.values(layering).forEach((layer) => layer.forEach((v, i) => { graph.node(v).order = i; }));
    assign(layers);

    let bestCC = Infinity, best;
    for (let i = 0, lastBest = 0; lastBest < 4; ++i, ++lastBest) {
      let biasRight = true;
      const constraints = { edges: [], keys: new Set() };
      const switchBias = i % 4 >= 2;
      for (const lg of i % 2 ? down : up) {
        const sorted = sortSubgraph(lg, ROOT, constraints, biasRight);
        if (switchBias && sorted.usedBias) biasRight = !biasRight;
        sorted.vs.forEach((v, k) => { lg.label.get(v).order = k; });
        addConstraints(lg, constraints, sorted.vs);
      }
      const layering = layerMatrix(graph, ids);
      const cc = crossings(graph, layering);
      if (cc < bestCC) { lastBest = 0; best = Object.assign({}, layering); bestCC = cc; } else if (cc === bestCC) best = structuredClone(layering);
    }
    assign(best);
  };
}(self));
