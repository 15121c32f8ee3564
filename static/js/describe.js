// describe.js — a step written out in words, like a row of the seed's tape table.
import { formatShape } from "./format.js";

const INFIX = { matmul: " @ ", add: " + ", sub: " - ", mul: " * ", div: " / " };

export function describeStep(index, stepIndex) {
  const { trace } = index;
  const step = trace.steps[stepIndex];
  const entry = step.entry === null || step.entry === undefined ? null : trace.tape[step.entry];
  const name = (id) => index.tensor(id)?.name ?? `tensor ${id}`;
  const named = (id) => `${name(id)} ${formatShape(index.tensor(id)?.shape ?? [])}`;
  if (!entry) {
    const param = step.param === undefined ? "" : ` · ${typeof step.param === "number" ? name(step.param) : step.param}`;
    return `${step.phase} · step ${stepIndex}${param}`;
  }
  const head = `${step.phase} · entry ${entry.index}`;
  if (step.phase === "backward") {
    const item = index.sweepByStep.get(stepIndex);
    const reads = item && item.reads.length ? `reads ${[...new Set(item.reads)].map(name).join(", ")}` : "reads nothing saved";
    const to = item ? item.contributions.map((c) => name(c.to)) : [];
    return `${head} · ${entry.backward} ${reads} → grads for ${[...new Set(to)].join(", ") || "nothing"}`;
  }
  const operands = entry.inputs.map(named).join(INFIX[entry.op] || ", ");
  const call = INFIX[entry.op] ? `${entry.op} ${operands}` : `${entry.op}(${operands})`;
  const saves = entry.saved.length ? `saves ${[...new Set(entry.saved)].map(name).join(", ")}` : "saves nothing";
  return `${head} · ${call} → ${name(entry.output)}, ${saves}`;
}
