// graph-groups.js — the graph's modules: nodes grouped by scope (layers[i], a residual's or a repeat's inner layers,
// a transformer block and its attention / mlp), each group with its name and the bytes its entries save. A folded
// group is drawn as one box; visibleGraph() is the graph with every folded group standing in for its members, the
// edges between them bundled into one per pair (their bytes summed). A parameter belongs to the scopes its name and
// the ops around it share; a leaf that is neither parameter nor input (a collective's buffer, a gradient before its
// reduce-scatter) to the scopes every op reading it shares, so FSDP2's buffers fold into their block. A flat scope
// (a repeat of many identical layers) is bucketed: past BUCKET_MAX sibling groups, runs of them are gathered into
// range groups ("layers[0][0–5]"), level over level, so no group ever opens onto more than BUCKET_MAX boxes in a row.
// An imported run that checkpoints itself: the module a checkpoint region is (every forward op of the group in that
// region) is labelled "⟲ checkpointed" and carries the region, so its box and frame are drawn as a checkpoint.
import { formatBytes } from "../lib/format.js";

/** "layers[1].attn" -> ["layers[1]", "layers[1].attn"]; "layers[0][3][1]" -> ["layers[0]", "layers[0][3]", "layers[0][3][1]"]. */
export function scopePrefixes(scope) {
  if (!scope) return [];
  const parts = scope.match(/[^.[\]]+(?:\[\d+\])?|\[\d+\]/g) ?? [];
  const prefixes = [];
  let path = "";
  for (const part of parts) {
    path = !path ? part : part.startsWith("[") ? `${path}${part}` : `${path}.${part}`;
    prefixes.push(path);
  }
  return prefixes;
}

export const BUCKET_MAX = 6;

/** Leaf id -> the scope prefixes of every op reading it (from the graph's edges). */
function leafReaders(nodes, index) {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const readers = new Map();
  for (const edge of index.trace?.graph?.edges ?? []) {
    const reader = byId.get(edge.target);
    if (!edge.source.startsWith("t") || !reader?.isOp) continue;
    (readers.get(edge.source) ?? readers.set(edge.source, []).get(edge.source)).push(scopePrefixes(reader.scope));
  }
  return readers;
}

/** The prefixes every list starts with: the scopes all of a leaf's readers share. */
function sharedPrefix(lists) {
  if (!lists.length) return [];
  let common = lists[0];
  for (const list of lists.slice(1)) {
    let i = 0;
    while (i < common.length && common[i] === list[i]) i++;
    common = common.slice(0, i);
  }
  return common;
}

/** The layer a scope names in the spec, for a group's title: "layers[1]" -> "transformer_block"; inside a repeat the
 * first index is an iteration ("layers[0][3]" -> "iteration 3"). A named part ("layers[1].attn") is its own name. */
function layerType(spec, path) {
  if (!path.endsWith("]")) return "";
  let layer = { layers: spec?.layers ?? [] };
  let type = "";
  let iterating = false;
  for (const [, text] of path.matchAll(/\[(\d+)\]/g)) {
    const i = Number(text);
    if (layer.type === "repeat" && !iterating) { iterating = true; type = `iteration ${i}`; continue; }
    layer = layer.layers?.[i];
    iterating = false;
    if (!layer) return "";
    type = layer.type ?? "";
  }
  return type;
}

/**
 * nodes: the graph's node models (op nodes carry `scope`; a parameter's name says where it lives). Sets each
 * node's `groups` (its groups' ids, outermost first) and returns Map id -> {id, parent, depth, members, label, title,
 * savedBytes}. A scope is a group only when it holds two or more nodes and differs from its only child.
 */
export function buildGroups(nodes, index, spec) {
  // A parameter belongs to the scopes of the ops around it: "layers[1].attn.q.weight" to layers[1] and layers[1].attn.
  const opScopes = new Set(nodes.filter((n) => n.isOp).flatMap((n) => scopePrefixes(n.scope)));
  const readers = leafReaders(nodes, index);
  const members = new Map();
  const childScopes = new Map();   // scope -> its direct sub-scopes
  for (const node of nodes) {
    if (node.isOp) node.scopes = scopePrefixes(node.scope);
    else if (node.kind === "param") node.scopes = scopePrefixes(node.name).filter((p) => p !== node.name && opScopes.has(p));
    else if (node.kind === "input") node.scopes = [];
    else node.scopes = sharedPrefix(readers.get(node.id) ?? []);
    node.scopes.forEach((prefix, i) => {
      (members.get(prefix) ?? members.set(prefix, []).get(prefix)).push(node);
      if (i) (childScopes.get(node.scopes[i - 1]) ?? childScopes.set(node.scopes[i - 1], new Set()).get(node.scopes[i - 1])).add(prefix);
    });
  }
  const kept = new Map();
  for (const [id, list] of members) {
    if (list.length < 2) continue;
    // The same nodes as a deeper scope: the deeper one names them better (a member set only shrinks going down, so
    // a direct sub-scope of the same size is where to look).
    if ([...(childScopes.get(id) ?? [])].some((child) => members.get(child).length === list.length)) continue;
    kept.set(id, list);
  }
  // Every tensor an entry saves for backward counts: its output, and what else it made (dropout's mask).
  const savedByEntry = new Map();
  for (const tensor of index.savedTensors) {
    if (tensor.produced_by !== null) savedByEntry.set(tensor.produced_by, (savedByEntry.get(tensor.produced_by) ?? 0) + tensor.nbytes);
  }
  const groups = new Map();
  for (const node of nodes) node.groups = node.scopes.filter((s) => kept.has(s));
  for (const [id, list] of kept) {
    const prefixes = scopePrefixes(id).filter((p) => kept.has(p) && p !== id);
    const savedBytes = list.reduce((sum, n) => sum + (n.isOp ? savedByEntry.get(n.entry) ?? 0 : 0), 0);
    const type = layerType(spec, id);
    groups.set(id, {
      id, parent: prefixes.at(-1) ?? null, depth: prefixes.length, members: list.map((n) => n.id),
      entries: list.filter((n) => n.isOp).map((n) => n.entry), savedBytes,
      label: `${id}${type ? ` · ${type.replace("transformer_block", "block")}` : ""}`,
      title: `${id}${type ? ` (${type})` : ""}: ${list.length} nodes, saves ${formatBytes(savedBytes)} for backward`,
    });
  }
  markCheckpointed(groups, index);
  bucketSiblings(groups, nodes);
  return groups;
}

/** The group that is an imported checkpoint region's module gets `checkpoint` (the region), its label and title say so. */
function markCheckpointed(groups, index) {
  for (const region of index.checkpointed ?? []) {
    const group = region.path ? groups.get(region.path) : null;
    const forward = group?.entries.filter((entry) => index.trace.tape[entry]?.phase === "forward") ?? [];
    if (!forward.length || forward.some((entry) => index.regionOf.get(entry) !== region)) continue;
    const steps = region.recomputeSteps;
    group.checkpoint = region;
    group.label = `${group.label} · ⟲ checkpointed`;
    group.title = `${group.title}; checkpointed (torch.utils.checkpoint): forward keeps only its input, backward re-runs it`
      + (steps.length ? ` at steps ${steps[0]}–${steps.at(-1)}` : "");
  }
}

/** "layers[0][3][0]" under "layers[0]" -> 3: the iteration (or layer) index a child group's id adds to its parent's. */
function childIndex(parentId, childId) {
  const rest = parentId ? childId.slice(parentId.length) : childId;
  return rest.match(/^\[(\d+)\]/)?.[1] ?? rest.match(/\[(\d+)\]/)?.[1] ?? null;
}

/** A range group over a run of sibling groups: their members, entries and saved bytes summed. */
function rangeGroup(parentId, run) {
  const [first, last] = [run[0], run.at(-1)];
  const [from, to] = [childIndex(parentId, first.rangeFrom ?? first.id), childIndex(parentId, last.rangeTo ?? last.id)];
  const label = from !== null && to !== null ? `${parentId ?? "layers"}[${from}–${to}]` : `${first.label} … ${last.label}`;
  const savedBytes = run.reduce((sum, g) => sum + g.savedBytes, 0);
  const members = run.flatMap((g) => g.members);
  return {
    id: `${label}#range`, parent: parentId, depth: 0, members, entries: run.flatMap((g) => g.entries), savedBytes,
    label, rangeFrom: first.rangeFrom ?? first.id, rangeTo: last.rangeTo ?? last.id, range: true,
    covers: run.flatMap((g) => (g.range ? g.covers : [g.id])),   // the scope groups inside, however deep the ranges nest
    title: `${label}: ${run.length} groups, ${members.length} nodes, saves ${formatBytes(savedBytes)} for backward`,
  };
}

/** Gather the children of any parent with more than BUCKET_MAX child groups into range groups, level over level;
 * each node's `groups` path gets the ranges it sits in, and every depth is recomputed. */
function bucketSiblings(groups, nodes) {
  const firstEntry = (g) => Math.min(...g.entries, Infinity);
  const childrenOf = new Map();
  for (const group of groups.values()) (childrenOf.get(group.parent) ?? childrenOf.set(group.parent, []).get(group.parent)).push(group);
  const rangesAbove = new Map();   // group id -> the range ids around it, outermost first
  for (const [parentId, children] of childrenOf) {
    if (children.length <= BUCKET_MAX) continue;
    // In layer order when every child is numbered (layers[0][3]): under a checkpoint a layer's only entries may be its
    // recompute, whose tape order is backward's (the last layers first); else in the order the tape first meets them.
    const numbers = new Map(children.map((g) => [g, childIndex(parentId, g.id)]));
    let level = [...numbers.values()].every((n) => n !== null)
      ? children.sort((a, b) => Number(numbers.get(a)) - Number(numbers.get(b)))
      : children.sort((a, b) => firstEntry(a) - firstEntry(b));
    while (level.length > BUCKET_MAX) {
      const next = [];
      for (let i = 0; i < level.length; i += BUCKET_MAX) {
        const run = level.slice(i, i + BUCKET_MAX);
        if (run.length === 1) { next.push(run[0]); continue; }
        const range = rangeGroup(parentId, run);
        groups.set(range.id, range);
        for (const child of run) {
          child.parent = range.id;
          for (const id of child.range ? child.covers : [child.id]) {
            rangesAbove.set(id, [range.id, ...(rangesAbove.get(id) ?? [])]);
          }
        }
        next.push(range);
      }
      level = next;
    }
  }
  for (const node of nodes) {
    node.groups = node.groups.flatMap((id) => [...(rangesAbove.get(id) ?? []), id]);
  }
  for (const group of groups.values()) {
    let depth = 0;
    for (let id = group.parent; id; id = groups.get(id)?.parent) depth += 1;
    group.depth = depth;
  }
}

/** The node id a node is drawn as: its outermost folded group's, else its own. */
export function representative(node, collapsed) {
  const folded = node.groups?.find((g) => collapsed.has(g));
  return folded ? `g:${folded}` : node.id;
}

/** The graph with folded groups standing in for their members: {nodes, edges, rep}. */
export function visibleGraph(nodes, edges, groups, collapsed, { height, charWidth }) {
  const rep = new Map(nodes.map((n) => [n.id, representative(n, collapsed)]));
  const shown = nodes.filter((n) => rep.get(n.id) === n.id);
  const folded = [...new Set([...rep.values()].filter((id) => id.startsWith("g:")))].map((id) => {
    const group = groups.get(id.slice(2));
    const label = group.savedBytes ? `${group.label} · ${formatBytes(group.savedBytes)}` : group.label;   // "· 0 B" says nothing
    return { id, isGroup: true, group, label, height, width: Math.round(24 + charWidth * label.length),
      searchText: `${group.id} ${group.label}`.toLowerCase(), glyph: "▣" };
  });
  const bundles = new Map();
  const out = [];
  for (const edge of edges) {
    const [source, target] = [rep.get(edge.source), rep.get(edge.target)];
    if (source === target) continue;
    if (source === edge.source && target === edge.target) { out.push(edge); continue; }
    const key = `${source}>${target}${edge.link ? "#link" : ""}`;
    const bundle = bundles.get(key);
    if (bundle) { bundle.nbytes += edge.nbytes; bundle.count += 1; bundle.targets.push(edge.target); continue; }
    const made = { ...edge, source, target, key, bundled: true, count: 1, targets: [edge.target] };
    bundles.set(key, made);
    out.push(made);
  }
  return { nodes: shown.concat(folded), edges: out, rep };
}
