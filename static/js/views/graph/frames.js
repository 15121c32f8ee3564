// frames.js — where the names of open group frames go, so nested frames never draw their names over each other.
// A frame's name sits just above its top-left corner, or at the top left of the part of it in view (a frame bigger
// than the panel keeps its name on screen). Deep in a big graph nested frames share (nearly) one top edge: their
// names then read as one breadcrumb on that line ("▾ layers[0] › [6–11] › [11][0] › [6] · iteration 6 · 128 B"),
// each part naming what it adds to the one before and folding its own group on a click, the innermost in full.
// A name never overlaps a name already placed on its line.
import { formatBytes } from "../../lib/format.js";

const FRAME_CHAR_WIDTH = 6.2;   // an 11 px sans-serif frame name, per character
const LINE_HEIGHT = 14;         // names whose baselines are closer than this share a line
const GAP = 8;
const VIEW_INSET = 16;          // a frame whose top is out of view is named this far under the view's top

/** A group's name: in full (its layer type) when it ends a breadcrumb, else its scope alone (and a checkpoint's mark). */
const nameOf = (group, short) => (short && !group.range ? `${group.id}${group.checkpoint ? " ⟲ checkpointed" : ""}` : group.label);

/** What a group's name adds to its nearest scope's: "layers[0][11]" inside "layers[0]" (or inside a range of
 * layers[0]'s iterations) -> "[11]". */
function ownPart(group, byId, short) {
  const name = nameOf(group, short);
  let scope = group.parent ? byId.get(group.parent) : null;
  while (scope?.range) scope = scope.parent ? byId.get(scope.parent) : null;
  if (!scope || !name.startsWith(scope.id) || name.length === scope.id.length) return name;
  return name.slice(scope.id.length);
}

/** The part of each box in `view` ({x0, y0, x1, y1}, layout coordinates; null: all of it), as {left, top}. */
function visibleCorner(box, view) {
  const [left, top] = [box.x - box.width / 2, box.y - box.height / 2];
  if (!view) return { left, top };
  const right = box.x + box.width / 2;
  const bottom = box.y + box.height / 2;
  return { left: Math.min(Math.max(left, view.x0), right - 40), top: Math.min(Math.max(top, view.y0 + VIEW_INSET), bottom) };
}

/**
 * openGroups: the open groups ({id, parent, depth, label, savedBytes, range?}); boxes: their frames ({x, y, width,
 * height}, centred), from the layout; view: the part of the layout in the panel, or null.
 * -> Map id -> {x, y, text, end}: each frame's name, where its baseline starts and ends.
 */
export function frameLabels(openGroups, boxes, view = null) {
  const shown = openGroups.filter((g) => boxes[g.id]).sort((a, b) => a.depth - b.depth);
  const byId = new Map(shown.map((g) => [g.id, g]));
  const corner = new Map(shown.map((g) => [g.id, visibleCorner(boxes[g.id], view)]));
  const baseline = (g) => corner.get(g.id).top - 4;
  // A frame whose top is (nearly) its parent's continues its parent's line.
  const continues = (g) => byId.has(g.parent) && Math.abs(baseline(byId.get(g.parent)) - baseline(g)) < LINE_HEIGHT;
  const followed = new Set(shown.filter(continues).map((g) => g.parent));
  const placed = [];   // {x, end, y}
  const labels = new Map();   // id -> {x, y, text, end}
  for (const group of shown) {
    const short = followed.has(group.id);
    const after = continues(group) ? labels.get(group.parent) : null;   // the breadcrumb it extends
    const name = after ? `› ${ownPart(group, byId, short)}` : `▾ ${nameOf(group, short)}`;
    const text = !short && group.savedBytes ? `${name} · ${formatBytes(group.savedBytes)}` : name;
    const width = text.length * FRAME_CHAR_WIDTH;
    const y = after ? after.y : baseline(group);
    let x = Math.max(corner.get(group.id).left + 6, after ? after.end + GAP : -Infinity);
    const onLine = placed.filter((p) => Math.abs(p.y - y) < LINE_HEIGHT);
    for (let moved = true; moved;) {   // pushed along past every name on its line it would run into
      moved = false;
      for (const other of onLine) {
        if (x < other.end + GAP && x + width + GAP > other.x) { x = other.end + GAP; moved = true; }
      }
    }
    placed.push({ x, end: x + width, y });
    labels.set(group.id, { x, y, text, end: x + width });
  }
  return labels;
}
