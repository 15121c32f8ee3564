// describe.js — a step written out in words, like a row of the seed's tape table; checkpointed runs add
// "forward (no tape) · inside checkpoint entry 4 · tanh" and "recompute · entry 12 · re-running matmul …"; with
// op-level recomputation a backward step says what it recomputes ("↻ recomputes t61") and a forward one its recipes;
// under create_graph an op the first backward recorded says whose vjp recorded it. An imported run that checkpoints
// itself says the same in its words: "· inside checkpoint region 2 (blocks.2): kept nothing, recomputed in backward",
// "· for checkpoint region 2 (blocks.2), inside AddmmBackward0 (entry 16)", "· re-ran checkpoint region 2 … first".
import { formatShape } from "../lib/format.js";
import { blocksText, recomputedForText, regionText } from "./trace-index.js";

const INFIX = { matmul: " @ ", add: " + ", sub: " - ", mul: " * ", div: " / " };

export function describeStep(index, stepIndex) {
  const { trace } = index;
  const step = trace.steps[stepIndex];
  const entry = step.entry === null || step.entry === undefined ? null : trace.tape[step.entry];
  const name = index.nameOf;
  const named = (id) => `${name(id)} ${formatShape(index.tensor(id)?.shape ?? [])}`;
  if (!entry) {
    const param = step.param === undefined ? "" : ` · ${typeof step.param === "number" ? name(step.param) : step.param}`;
    return `${step.phase} · step ${stepIndex}${param}`;
  }
  const region = blocksText(index.regions.get(entry.index));
  if (step.phase === "forward" && step.recorded === false) {
    return `forward (no tape) · inside checkpoint entry ${entry.index}${region ? ` (${region})` : ""} · ${step.op ?? "an op"}`;
  }
  const head = `${step.phase} · entry ${entry.index}`;
  if (index.sweepByStep.has(stepIndex)) {      // a backward step (in a double backward, either sweep)
    const item = index.sweepByStep.get(stepIndex);
    const reads = item && item.reads.length ? `reads ${[...new Set(item.reads)].map(name).join(", ")}` : "reads nothing saved";
    const to = item ? item.contributions.map((c) => name(c.to)) : [];
    const ran = index.regionRunBy(entry.index);
    const rerun = index.isCheckpoint(entry.index) ? ` · re-runs ${region || "its region"} with the tape on`
      : ran ? ` · its unpack re-ran ${regionText(ran)} first (steps ${ran.recomputeSteps[0]}–${ran.recomputeSteps.at(-1)})` : "";
    const rederived = index.rederivedAt.get(stepIndex) ?? [];
    const recomputes = rederived.length ? `↻ recomputes ${rederived.map((t) => name(t.recompute_of)).join(", ")}, ` : "";
    return `${head} · ${entry.backward} ${recomputes}${reads} → grads for ${[...new Set(to)].join(", ") || "nothing"}${rerun}`;
  }
  const operands = entry.inputs.map(named).join(INFIX[entry.op] || ", ");
  const call = INFIX[entry.op] ? `${entry.op} ${operands}` : `${entry.op}(${operands})`;
  const inRegion = step.phase === "forward" ? index.regionOf.get(entry.index) : null;
  if (inRegion) {
    return `${head} · ${call} → ${name(entry.output)}, saves nothing · inside ${regionText(inRegion)}: recomputed in backward`;
  }
  const recipes = entry.recomputes?.length ? `, keeps ${[...new Set(entry.recomputes)].map(name).join(", ")} as a recipe (recomputed in backward)` : "";
  const saves = (entry.saved.length ? `saves ${[...new Set(entry.saved)].map(name).join(", ")}` : "saves nothing") + recipes;
  if (step.phase === "recompute") {
    const owner = recomputedForText(index, entry.index);
    return `${head} · re-running ${call} → ${name(entry.output)}, ${saves}${owner ? ` · for ${owner}` : ""}`;
  }
  if (index.isCheckpoint(entry.index)) {
    return `${head} · checkpoint(${operands})${region ? ` over ${region}` : ""} → ${name(entry.output)}, ${saves} — the inside runs without the tape`;
  }
  if (entry.recorded_in === "backward") {
    return `${head} · ${call} → ${name(entry.output)}, ${saves} — recorded by entry ${entry.recorded_for}'s vjp (create_graph), for backward-2`;
  }
  return `${head} · ${call} → ${name(entry.output)}, ${saves}`;
}
