// fold.js — which of the graph's modules are folded, and the layout of what that leaves drawn. A new graph opens
// folded to the deepest level that fits the panel at a legible scale (or its folded top level), in the direction that
// fits the panel best (left to right, or top to bottom in a narrow panel); a person's folds and unfolds are theirs;
// the player unfolds the groups on the cursor's path as it enters them (not at the step the graph opened on) and
// folds back those it opened when it leaves. relayout requests are queued: one layout at a time, and a request made
// meanwhile runs once after it.
import { visibleGraph } from "../../model/graph-groups.js";
import { LABEL_SCALE } from "./nav.js";
import { layoutGraph, turnsMaxBoxes } from "./layout.js";

const PLAIN_MAX_NODES = 60;      // a graph this small is drawn plain when that fits legibly (dagre's clusters would
                                 // stretch it)
const LEVEL_MAX_BOXES = 150;     // a fold level drawing more boxes than this is never a candidate for the first view

/** Whether any group enclosing `group` is folded (then `group` is not drawn at all). */
function ancestorFolded(group, groups, collapsed) {
  for (let id = group.parent; id; id = groups.get(id)?.parent) if (collapsed.has(id)) return true;
  return false;
}

/** Level d: every group shallower than d open, the rest folded (level 0: all folded). */
const foldedBelow = (groups, level) => new Set([...groups.values()].filter((g) => g.depth >= level).map((g) => g.id));

/** The groups drawn as open frames: unfolded, with no folded group around them. */
export function openGroupsOf(groups, fold) {
  if (!fold.framed) return [];
  return [...groups.values()].filter((g) => !fold.collapsed.has(g.id) && !ancestorFolded(g, groups, fold.collapsed));
}

/** Lay out what `fold` leaves drawn, in its direction: {shown: {nodes, edges, rep}, openGroups, layout}. */
export async function layoutFolded(model, fold, { height, charWidth, weight, inPage = false }) {
  const { nodes, edges, groups } = model;
  const shown = visibleGraph(nodes, edges, groups, fold.collapsed, { height, charWidth });
  const openGroups = openGroupsOf(groups, fold);
  const open = new Set(openGroups.map((g) => g.id));
  const innermostOpen = (n) => (n.isGroup ? n.group.parent : [...(n.groups ?? [])].reverse().find((g) => open.has(g))) ?? null;
  const layout = await layoutGraph(
    shown.nodes.map((n) => ({ id: n.id, width: n.width, height: n.height, parent: open.has(innermostOpen(n)) ? innermostOpen(n) : null })),
    shown.edges.map(({ source, target, link }) => ({ source, target, weight: weight(target, link) })),
    openGroups.map((g) => ({ id: g.id, parent: g.parent && open.has(g.parent) ? g.parent : null })),
    { inPage, rankdir: fold.rankdir });
  return { shown, openGroups, layout };
}

/**
 * Lay `fold` out in the direction that reads best in the panel, and keep it in fold.rankdir (a fold or an unfold
 * later keeps it, so the drawing does not turn under the person): left to right when that is legible whole at
 * `scaleIn(layout)` (the scale fitting it to the panel), else top to bottom when that is, else whichever is larger.
 * -> {laid, legible}.
 */
async function laidOutToFit(model, fold, options, scaleIn) {
  let best = null;
  for (const rankdir of ["LR", "TB"]) {
    fold.rankdir = rankdir;
    const laid = await layoutFolded(model, fold, options);
    const scale = scaleIn(laid.layout);
    if (!best || scale > best.scale) best = { laid, scale };
    if (scale >= LABEL_SCALE || laid.shown.nodes.length > turnsMaxBoxes()) break;
  }
  fold.rankdir = best.laid.layout.rankdir;
  return { laid: best.laid, legible: best.scale >= LABEL_SCALE };
}

/** A fold state: {collapsed, autoOpened, autoFold, framed, rankdir, path, openedAt}. */
function foldState(collapsed, { autoFold, framed, rankdir = "LR" }) {
  return { collapsed, autoOpened: new Set(), autoFold, framed, rankdir, path: null, openedAt: null };
}

/**
 * The fold a new graph opens with, and its layout: plain when small and legible whole; else the deepest level whose
 * drawing is legible whole (`scaleIn(layout)`: the scale fitting a layout to the panel), else level 0. A re-trace of
 * the same model (`saved` with its rankdir) keeps its fold and direction; the workspace's saved view keeps its fold.
 * `framed` draws a small graph's groups as frames from the start.
 */
export async function openingFold(model, { saved, scaleIn, layoutOptions, framed = false }) {
  const { groups, nodes } = model;
  const inPage = { ...layoutOptions, inPage: nodes.length <= 2000 };   // opening: no frame waits on it (a huge plain
                                                                       // graph still goes to the worker)
  if (saved?.rankdir) return { fold: saved, laid: await layoutFolded(model, saved, inPage) };
  if (saved) return { fold: saved, laid: (await laidOutToFit(model, saved, inPage, scaleIn)).laid };
  if (!groups.size || nodes.length <= PLAIN_MAX_NODES) {
    const plain = foldState(new Set(), { autoFold: false, framed });
    const { laid, legible } = await laidOutToFit(model, plain, inPage, scaleIn);
    if (legible || !groups.size) return { fold: plain, laid };
  }
  const deepest = Math.max(...[...groups.values()].map((g) => g.depth)) + 1;
  let best = null;
  for (let level = 0; level <= deepest; level += 1) {
    const fold = foldState(foldedBelow(groups, level), { autoFold: true, framed: true });
    const boxes = visibleGraph(nodes, [], groups, fold.collapsed, { height: 0, charWidth: 0 }).nodes.length;
    if (level > 0 && boxes > LEVEL_MAX_BOXES) break;
    // A few small trial layouts, in the page.
    const { laid, legible } = await laidOutToFit(model, fold, { ...layoutOptions, inPage: true }, scaleIn);
    if (level > 0 && !legible) break;
    best = { fold, laid };
  }
  return best;
}

/** The fold a re-trace of the same model keeps: what was folded stays folded, new groups start folded. */
export function carriedFold(before, groups) {
  const fold = foldState(new Set([...groups.keys()].filter((id) => (before.groups.has(id) ? before.fold.collapsed.has(id) : before.fold.autoFold))),
    { autoFold: before.fold.autoFold, framed: before.fold.framed, rankdir: before.fold.rankdir });
  fold.autoOpened = new Set([...before.fold.autoOpened].filter((id) => groups.has(id)));
  fold.path = before.fold.path;
  return fold;
}

/** A saved view ({unfolded: "all" | [group ids]}) as a fold state on these groups, or null when it names none (its
 * direction is chosen again, for the panel it opens in). */
export function savedFold(unfolded, groups) {
  if (unfolded === "all") return foldState(new Set(), { autoFold: false, framed: true });
  if (!Array.isArray(unfolded) || !unfolded.some((id) => groups.has(id))) return null;
  const open = new Set(unfolded);
  return foldState(new Set([...groups.keys()].filter((id) => !open.has(id))), { autoFold: true, framed: true });
}

/** What the workspace saves of a fold: "all", or the groups open by a person or by the opening level (the player's
 * own unfolds are not kept). */
export function foldToSave(fold, groups) {
  if (!fold.collapsed.size && !fold.autoFold) return "all";
  return [...groups.keys()].filter((id) => !fold.collapsed.has(id) && !fold.autoOpened.has(id));
}

/** A person folds or unfolds a group: theirs from now on (the player will not fold it back). */
export function toggleFold(fold, groupId) {
  if (fold.collapsed.has(groupId)) fold.collapsed.delete(groupId);
  else fold.collapsed.add(groupId);
  fold.autoOpened.delete(groupId);
  fold.framed = true;
}

/** Unfold the groups a node is folded inside (a search hit); true when something opened. */
export function revealNode(fold, node) {
  if (!node || node.isGroup || !node.groups.some((g) => fold.collapsed.has(g))) return false;
  for (const g of node.groups) { fold.collapsed.delete(g); fold.autoOpened.delete(g); }
  return true;
}

/** Unfold every group (the player then folds nothing), or fold them all back. */
export function foldAll(fold, groups, folded) {
  fold.collapsed = new Set(folded ? groups.keys() : []);
  fold.autoOpened.clear();
  fold.autoFold = folded;
  fold.framed = true;
  fold.path = null;
}

/** A step the graph is shown at: the first after it is drawn is the one it opened on (nothing to unfold for it).
 * Noted at once: noted when that step's settle came, a step sooner (a quick press) was taken for the opening one. */
export function noteShown(fold, stepIndex) {
  if (fold.openedAt === null) fold.openedAt = stepIndex;
}

/** The player is at `stepIndex` on `node`: unfold the folded groups on its path, fold back those it unfolded and
 * left. Nothing moves at the step the graph opened on. True when the fold changed. */
export function followCursor(fold, node, stepIndex) {
  if (!fold.autoFold || fold.openedAt === stepIndex) return false;
  fold.openedAt = -1;
  const path = node?.groups ?? [];
  const key = path.join("|");
  if (key === fold.path) return false;
  fold.path = key;
  let changed = false;
  for (const id of [...fold.autoOpened]) {
    if (!path.includes(id)) { fold.autoOpened.delete(id); fold.collapsed.add(id); changed = true; }
  }
  for (const id of path) {
    if (fold.collapsed.has(id)) { fold.collapsed.delete(id); fold.autoOpened.add(id); changed = true; }
  }
  return changed;
}

/** run(options) one at a time: a request while one runs is run once, after it, with the last options asked for. */
export function createRelayoutQueue(run) {
  let running = null;
  let again = null;
  return async function relayout(options = {}) {
    if (running) { again = options; return running; }
    running = run(options);
    try { await running; } finally { running = null; }
    if (again) { const next = again; again = null; await relayout(next); }
  };
}
