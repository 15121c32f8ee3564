// trace-index.js — lookups over one trace document (by id, by step), built once; nothing here recomputes memory.
// Checkpointed runs add: which block region each checkpoint entry covers, which checkpoint's backward re-ran
// each recompute entry, and the recompute steps of each checkpoint. Op-level (selective) recomputation adds: the
// entries whose outputs are kept as recipes instead of saved, and the recomputed copies each backward step makes.
// An imported torch run that checkpoints itself has no checkpoint entries: its `checkpoint_regions` say which forward
// entries each region holds and which backward node's unpack re-ran it; that node stands where our engine's
// checkpoint entry does (recomputedFor, recomputeSteps), and each region's module path names it.
// Whether a tensor is alive at a step is the memory core's rule (live-bytes.js).
import { isAlive } from "./live-bytes.js";

/** checkpoint tape index -> {ordinal, blocks, path}: the k-th checkpoint recorded covers schedule.block_regions[k]. */
function checkpointRegions(trace) {
  const regions = trace.schedule?.block_regions ?? [];
  const entries = trace.tape.filter((e) => e.op === "checkpoint" && e.phase === "forward").map((e) => e.index);
  // trace.blocks lists every block by its number: a region is named by its first block's module
  const out = new Map();
  entries.forEach((entry, ordinal) => {
    const blocks = regions[ordinal] ?? null;
    out.set(entry, { ordinal, blocks, path: blocks ? trace.blocks?.[blocks[0]]?.path ?? null : null });
  });
  return out;
}

/** The scope every scope in `scopes` sits in: "blocks.2" for "blocks.2.up", "blocks.2" and "blocks.2.down". */
function commonScope(scopes) {
  const split = scopes.map((scope) => (scope ?? "").split("."));
  const common = [];
  for (let i = 0; split.length && split.every((parts) => i < parts.length && parts[i] === split[0][i]); i += 1) common.push(split[0][i]);
  return common.join(".");
}

/** An imported run's checkpoint_regions: [{ordinal, path, entries: [first, end), owner, recomputeEntries,
 * recomputeSteps}], owner being the forward entry whose backward node unpacked first and so ran the recompute. */
function importedRegions(trace) {
  return (trace.checkpoint_regions ?? []).map((region) => {
    const [first, end] = region.entries;
    return {
      ordinal: region.index, entries: [first, end], owner: region.recomputed_in,
      path: commonScope(trace.tape.slice(first, end).map((entry) => entry.scope)) || null,
      recomputeEntries: region.recompute_entries ?? [], recomputeSteps: region.recompute_steps ?? [],
    };
  });
}

/** "checkpoint region 2 (blocks.2)": an imported run's region in words. */
export function regionText(region) {
  return `checkpoint region ${region.ordinal}${region.path ? ` (${region.path})` : ""}`;
}

/** Whom a recompute entry re-ran for, in words: "checkpoint entry 16" (our engine), or "checkpoint region 2
 * (blocks.2), inside AddmmBackward0 (entry 16)" (an imported run: the backward node that unpacked first); "" if unknown. */
export function recomputedForText(index, entry) {
  const owner = index.recomputedFor.get(entry);
  if (owner === undefined) return "";
  const region = index.regionOf.get(entry);
  if (!region) return `checkpoint entry ${owner}`;
  const node = index.trace.tape[owner];
  return `${regionText(region)}, inside ${node?.backward ?? node?.op ?? "the backward node"} (entry ${owner})`;
}

/** The top-level layer a scope belongs to: "layers[3]" for "layers[3][0][1]" or "layers[3].attn"; a scope outside
 * the layers by its first word ("loss", "input"); "other" for none. */
export const topLayer = (scope) => /^layers\[\d+\]/.exec(scope ?? "")?.[0] ?? (scope ? scope.split(".")[0] : "other");

/** "blocks 0–3", "block 16", or "" when the schedule does not say. */
export function blocksText(region) {
  const blocks = region?.blocks;
  if (!blocks || !blocks.length) return "";
  return blocks.length === 1 ? `block ${blocks[0]}` : `blocks ${blocks[0]}–${blocks[blocks.length - 1]}`;
}

export function indexTrace(trace) {
  const tensors = new Map(trace.tensors.map((t) => [t.id, t]));
  const tape = trace.tape;
  const recordedAt = new Map();   // tape index -> the forward (or recompute) step that recorded it
  const sweptAt = new Map();      // tape index -> the backward step that ran its vjp
  const recomputedFor = new Map();  // recompute tape index -> the checkpoint entry whose backward re-ran it
  const recomputeSteps = new Map(); // checkpoint tape index -> its recompute steps
  let checkpointInBackward = null;
  const sweepByStep = new Map(trace.sweep.map((item) => [item.step, item]));
  for (const step of trace.steps) {
    if (step.entry === null || step.entry === undefined) continue;
    // Under create_graph the first backward also records: its vjps' own ops (recorded_in "backward").
    const records = (step.phase === "forward" && step.recorded !== false) || step.phase === "recompute"
      || (step.phase === "backward" && !sweepByStep.has(step.index));
    if (records && !recordedAt.has(step.entry)) recordedAt.set(step.entry, step.index);
    if (sweepByStep.has(step.index)) {
      sweptAt.set(step.entry, step.index);      // a double backward sweeps a forward entry twice: the last counts
      if (tape[step.entry]?.op === "checkpoint") checkpointInBackward = step.entry;
    }
    if (step.phase === "recompute" && checkpointInBackward !== null) {
      if (!recomputedFor.has(step.entry)) recomputedFor.set(step.entry, checkpointInBackward);
      if (!recomputeSteps.has(checkpointInBackward)) recomputeSteps.set(checkpointInBackward, []);
      recomputeSteps.get(checkpointInBackward).push(step.index);
    }
  }
  // tensor id -> the sweep step that released it from the tape: each node that saved it lets go of its own reference
  // once it has run (sweep[].freed), so a tensor two nodes saved is held until the later of them has run.
  const releasedAt = new Map();
  for (const item of trace.sweep) {
    for (const id of item.freed) releasedAt.set(id, Math.max(item.step, releasedAt.get(id) ?? -Infinity));
  }
  const savedTensors = trace.tensors.filter((t) => t.saved_by && t.saved_by.length);
  const lastStep = trace.steps.length - 1;
  const backwardSteps = trace.steps.filter((s) => s.phase === "backward" || s.phase === "backward-2").map((s) => s.index);
  // The second tape: entries a create_graph backward recorded (its vjps' own ops), which backward-2 sweeps.
  const recordedBackward = new Set(tape.filter((e) => e.recorded_in === "backward").map((e) => e.index));
  const backwardEnd = backwardSteps.length ? Math.max(...backwardSteps) : null;
  const regions = checkpointRegions(trace);
  const checkpointed = importedRegions(trace);
  const regionOf = new Map();       // forward or recompute tape index -> the imported region it belongs to
  for (const region of checkpointed) {
    for (let entry = region.entries[0]; entry < region.entries[1]; entry += 1) regionOf.set(entry, region);
    for (const entry of region.recomputeEntries) {
      regionOf.set(entry, region);
      if (region.owner !== null) recomputedFor.set(entry, region.owner);
    }
    if (region.owner !== null && region.recomputeSteps.length) recomputeSteps.set(region.owner, region.recomputeSteps);
  }
  const recipeEntries = new Set();  // forward entries re-run in backward because a consumer keeps a recipe of their output
  const rederivedAt = new Map();    // step -> the recomputed copies (recompute_of) born in that backward step
  for (const t of trace.tensors) {
    // (inside an imported checkpoint region the whole region re-runs: no op of it is a recipe of its own)
    if (t.recomputed_by?.length && t.produced_by !== null && !regionOf.has(t.produced_by)) recipeEntries.add(t.produced_by);
    if (t.recompute_of !== undefined && t.recompute_of !== null) {
      if (!rederivedAt.has(t.born)) rederivedAt.set(t.born, []);
      rederivedAt.get(t.born).push(t);
    }
  }
  return {
    trace, tensors, recordedAt, sweptAt, sweepByStep, releasedAt, savedTensors, lastStep, backwardEnd,
    regions, checkpointed, regionOf, recomputedFor, recomputeSteps, recipeEntries, rederivedAt, recordedBackward,
    tensor: (id) => tensors.get(id),
    /** A tensor's name, or "tensor <id>" when the trace has none for that id. */
    nameOf: (id) => tensors.get(id)?.name ?? `tensor ${id}`,
    isCheckpoint: (entry) => tape[entry]?.op === "checkpoint",
    isRecompute: (entry) => tape[entry]?.phase === "recompute",
    /** The imported checkpoint region whose recompute `entry`'s backward node ran, or null. */
    regionRunBy: (entry) => checkpointed.find((region) => region.owner === entry && region.recomputeSteps.length) ?? null,
    isRecipe: (entry) => recipeEntries.has(entry),
    alive: isAlive,
    /** Whether the tape holds tensor `t` at `step`: recorded by a saving entry and not yet released. */
    held(t, step) {
      if (!this.alive(t, step) || !t.saved_by.length) return false;
      const recorded = t.saved_by.some((entry) => (recordedAt.get(entry) ?? Infinity) <= step);
      const released = releasedAt.get(t.id);
      return recorded && (released === undefined || step < released);
    },
  };
}
