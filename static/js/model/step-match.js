// step-match.js — the same moment in another run of the same model: a re-trace (a checkpoint policy, an edit) changes
// the steps' numbering (recompute steps come and go, checkpoint entries stand for whole blocks), so a kept step number
// would land on another op. A step is known by what runs there: forward, optimizer and other phases by their order
// within the phase (the forward runs the same ops whatever the policy); backward and recompute steps by their op and
// scope, the n-th such step of that phase. A step with no match in the new run (a recompute step, a checkpoint's own
// backward) stands for the first later step that has one: the backward op it was getting ready for.

/** What runs at `step` of `trace`: "phase" alone, or "phase|scope|op" where ops are told apart. */
function what(trace, step) {
  if ((step.phase !== "backward" && step.phase !== "recompute") || step.entry === null || step.entry === undefined) return step.phase;
  const entry = trace.tape[step.entry];
  return `${step.phase}|${entry?.scope ?? ""}|${entry?.op ?? ""}`;
}

/** Each step's key, "what#n" (the n-th step of that kind), in step order. */
function keys(trace) {
  const seen = new Map();
  return trace.steps.map((step) => {
    const kind = what(trace, step);
    const n = seen.get(kind) ?? 0;
    seen.set(kind, n + 1);
    return `${kind}#${n}`;
  });
}

/** The step of `after` where `before`'s step `index` is, or null when no later step of `before` has a match. */
export function matchingStep(before, index, after) {
  if (!before || !after || !Number.isInteger(index) || index < 0 || index >= before.steps.length) return null;
  const stepOf = new Map(keys(after).map((key, i) => [key, i]));
  const beforeKeys = keys(before);
  for (let i = index; i < beforeKeys.length; i += 1) {
    const found = stepOf.get(beforeKeys[i]);
    if (found !== undefined) return found;
  }
  return null;
}
