// graph-model.js — the graph's node and edge models from a trace: each op and leaf with its label, glyph, size and
// search text; the saved tensor each node shows a badge for; the dotted links that hang a recomputed region off its
// checkpoint; the layout weights; a node's title. graph.js draws them.
import { blocksText, recomputedForText, regionText } from "./trace-index.js";

const NODE_HEIGHT = 26;
const LEAF_HEIGHT = 20;
const LABEL_MAX = 24;
export const CHAR_WIDTH = 6.6;
// What a node shows when its label would be under 10 px on screen (views/graph/nav.js): a glyph for its op, or its kind.
const GLYPHS = { matmul: "@", add: "+", sub: "−", mul: "×", div: "÷", neg: "−", relu: "r", tanh: "~", sigmoid: "σ",
  exp: "e", log: "ln", sum: "Σ", mean: "μ", softmax: "s", layernorm: "N", dropout: "d", embedding: "E", reshape: "⇄",
  permute: "⇆", transpose: "T", gelu: "g", masked_fill: "m", cross_entropy: "L", mse: "L", checkpoint: "⟲" };
const glyphOf = (node) => (node.family === "collective" ? "⇄" : node.isOp ? GLYPHS[node.op] ?? node.op[0] : node.kind === "param" ? "W" : "x");

const shorten = (text) => (text.length > LABEL_MAX ? `…${text.slice(-(LABEL_MAX - 1))}` : text);

/** A collective's label says an asynchronous one's half: "all_reduce ↗" issued, "wait all_reduce" its wait. */
function collectiveLabel(node, index) {
  const event = index.trace.tape[node.entry]?.collective?.event;
  return event === "issued" ? `${node.op} ↗` : event === "waited" ? `wait ${node.op}` : node.op;
}

function opLabel(node, index) {
  if (node.family === "collective") return collectiveLabel(node, index);
  if (node.op !== "checkpoint") return node.op;
  const region = blocksText(index.regions.get(node.entry));
  return region ? `ckpt ${region}` : "checkpoint";
}

export function nodeModels(trace, index) {
  const ops = trace.graph.nodes.map((n) => ({
    ...n, isOp: true, label: opLabel(n, index), height: NODE_HEIGHT,
    recompute: index.isRecompute(n.entry) || index.isRecipe(n.entry), recipe: index.isRecipe(n.entry),
  }));
  const leaves = trace.graph.leaves.map((l) => ({ ...l, isOp: false, label: shorten(l.name), height: LEAF_HEIGHT }));
  const nodes = ops.concat(leaves);
  for (const node of nodes) {
    node.width = Math.round(18 + CHAR_WIDTH * node.label.length);
    node.glyph = glyphOf(node);
    const output = node.isOp ? trace.tape[node.entry]?.output : node.tensor;
    node.searchText = [node.label, node.op, node.name, node.scope, output !== undefined ? index.nameOf(output) : ""]
      .filter(Boolean).join(" ").toLowerCase();
  }
  return nodes;
}

/** Which tensor each node shows a badge for: an op's output or a leaf's own tensor, when the tape saves it. */
export function badgeTensors(trace, index) {
  const byNode = new Map();
  for (const tensor of index.savedTensors) {
    const nodeId = tensor.produced_by === null ? `t${tensor.id}` : `e${tensor.produced_by}`;
    byNode.set(nodeId, tensor);
  }
  return byNode;
}

/** Layout weights: in a checkpointed run the forward chain (edges into forward entries) outweighs the recomputed
 * regions and the dotted links, so it stays straight; any other run keeps dagre's uniform weights. */
export function edgeWeight(index, target, link) {
  if (!(index.regions.size || index.checkpointed.length) || link) return 1;
  return target[0] === "e" && index.trace.tape[Number(target.slice(1))]?.phase === "forward" ? 8 : 2;
}

/** Dotted links from each checkpoint to the detached copies of its saved input that its recompute starts from,
 * so a recomputed region is laid out hanging off the checkpoint that re-runs it. */
export function checkpointLinks(trace, index) {
  const links = [];
  const seen = new Set();
  for (const edge of trace.graph.edges) {
    if (!edge.source.startsWith("t") || !index.isRecompute(Number(edge.target.slice(1)))) continue;
    const tensor = index.tensor(edge.tensor);
    const born = tensor ? trace.steps[tensor.born] : null;
    if (!tensor || tensor.kind === "param" || !born || born.phase === "forward" || seen.has(edge.source)) continue;
    const owner = index.recomputedFor.get(Number(edge.target.slice(1)));
    if (owner === undefined) continue;
    seen.add(edge.source);
    links.push({ source: `e${owner}`, target: edge.source, tensor: edge.tensor, nbytes: edge.nbytes, link: true, owner });
  }
  return links;
}

export function nodeTitle(n, index) {
  if (!n.isOp) return `${n.name} (${n.kind})`;
  const scope = n.scope ? ` · ${n.scope}` : "";
  if (n.recipe) {
    return `entry ${n.entry} · ${n.op} (${n.family}): its output is not kept for backward but re-derived there (selective recomputation)${scope}`;
  }
  if (n.recompute) {
    const owner = recomputedForText(index, n.entry);
    return `entry ${n.entry} · ${n.op} (${n.family}), recomputed${owner ? ` for ${owner}` : ""}${scope}`;
  }
  const region = index.regionOf.get(n.entry);
  if (region) {
    return `entry ${n.entry} · ${n.op} (${n.family}) inside ${regionText(region)}: keeps nothing for backward, re-run there${scope}`;
  }
  if (n.op === "checkpoint") {
    const region = index.regions.get(n.entry);
    const where = region?.path ? ` from ${region.path}` : "";
    return `entry ${n.entry} · checkpoint of ${blocksText(region) || "a region"}${where}: saves only its input, re-runs the region in backward`;
  }
  if (n.family === "collective") {
    const collective = index.trace.tape[n.entry]?.collective;
    return `entry ${n.entry} · ${n.op} (collective${collective ? `, ${collective.event}` : ""}): ${index.trace.tape[n.entry]?.why ?? ""}${scope}`;
  }
  return `entry ${n.entry} · ${n.op} (${n.family})${scope}`;
}
