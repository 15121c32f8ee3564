// graph-progress.js — where a folded group stands in the run at a step: "recording" while the forward runs inside it,
// then "recorded"; in the backward "pending" until the sweep reaches it, "running" while it is inside ("recomputing"
// while a checkpoint re-runs its forward), "done" once every entry's vjp has run; and the bytes of its saved tensors still held. Drawn as a line under the group's box.
import { formatBytes } from "../lib/format.js";

/** Each drawn group node's entries and saved tensors, looked up once per layout. */
function groupsOf(nodes, index) {
  const entrySet = new Map();
  const groups = [];
  nodes.forEach((n, position) => {
    if (!n.isGroup) return;
    const entries = new Set(n.group.entries);
    const item = { position, entries, swept: n.group.entries.filter((e) => index.sweptAt.has(e)), saved: [] };
    for (const entry of entries) entrySet.set(entry, item);
    groups.push(item);
  });
  for (const tensor of index.savedTensors) {
    const owner = tensor.produced_by === null ? null : entrySet.get(tensor.produced_by);
    if (owner) owner.saved.push(tensor);
  }
  return groups;
}

/** {state, heldBytes} of one group at step `stepIndex`. */
function progressAt(group, stepIndex, index) {
  const step = index.trace.steps[stepIndex];
  const inside = step.entry !== null && step.entry !== undefined && group.entries.has(step.entry);
  const heldBytes = group.saved.reduce((sum, t) => sum + (index.held(t, stepIndex) ? t.nbytes : 0), 0);
  const recorded = [...group.entries].some((e) => (index.recordedAt.get(e) ?? Infinity) <= stepIndex);
  if (!recorded) return { state: "future", heldBytes };
  if (step.phase === "forward") return { state: inside ? "recording" : "recorded", heldBytes };
  const swept = group.swept.filter((e) => index.sweptAt.get(e) <= stepIndex).length;
  if (inside && step.phase === "recompute") return { state: "recomputing", heldBytes };
  if (inside && step.phase !== "optimizer") return { state: "running", heldBytes };
  if (swept === group.swept.length || step.phase === "optimizer") return { state: "done", heldBytes };
  return { state: swept ? "running" : "pending", heldBytes };
}

const WORDS = { recording: "▶ recording", recorded: "recorded", pending: "pending", running: "▶ running", recomputing: "↻ recomputing", done: "✓ done" };

/** nodes: the drawn node models (folded groups among them). show(stepIndex, nodeElements) writes each group's
 * data-state, data-held-bytes and its state line, touching only what changed. */
export function groupProgress(nodes, index) {
  const groups = groupsOf(nodes, index);
  const last = new Map();
  return {
    show(stepIndex, nodeElements) {
      for (const group of groups) {
        const { state, heldBytes } = progressAt(group, stepIndex, index);
        const key = `${state}|${heldBytes}`;
        if (last.get(group.position) === key) continue;
        last.set(group.position, key);
        const element = nodeElements[group.position];
        element.dataset.state = state;
        element.dataset.heldBytes = String(heldBytes);
        const line = element.querySelector("text.group-state");
        // A leading space: SVG drops it on screen, and it keeps the label's last word and this line's first apart where
        // a tool joins the two texts drawn on the box (axe's label-content-name-mismatch read "KiBrecorded").
        if (line) line.textContent = state === "future" ? "" : ` ${WORDS[state]}${heldBytes ? ` · holds ${formatBytes(heldBytes)}` : ""}`;
      }
    },
  };
}
