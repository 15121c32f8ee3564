// trace-index.js — lookups over one trace document (by id, by step), built once; nothing here recomputes memory.

export function indexTrace(trace) {
  const tensors = new Map(trace.tensors.map((t) => [t.id, t]));
  const recordedAt = new Map();   // tape index -> the forward step that recorded it
  const sweptAt = new Map();      // tape index -> the backward step that ran its vjp
  for (const step of trace.steps) {
    if (step.entry === null || step.entry === undefined) continue;
    if (step.phase === "forward" && !recordedAt.has(step.entry)) recordedAt.set(step.entry, step.index);
    if (step.phase === "backward") sweptAt.set(step.entry, step.index);
  }
  const sweepByStep = new Map(trace.sweep.map((item) => [item.step, item]));
  const releasedAt = new Map();   // tensor id -> the sweep step that released it from the tape
  for (const item of trace.sweep) {
    for (const id of item.freed) if (!releasedAt.has(id)) releasedAt.set(id, item.step);
  }
  const savedTensors = trace.tensors.filter((t) => t.saved_by && t.saved_by.length);
  const lastStep = trace.steps.length - 1;
  const backwardSteps = trace.steps.filter((s) => s.phase === "backward").map((s) => s.index);
  const backwardEnd = backwardSteps.length ? Math.max(...backwardSteps) : null;
  return {
    trace, tensors, recordedAt, sweptAt, sweepByStep, releasedAt, savedTensors, lastStep, backwardEnd,
    tensor: (id) => tensors.get(id),
    alive: (t, step) => t.born <= step && (t.freed === null || step <= t.freed),
    /** Whether the tape holds tensor `t` at `step`: recorded by a saving entry and not yet released. */
    held(t, step) {
      if (!this.alive(t, step) || !t.saved_by.length) return false;
      const recorded = t.saved_by.some((entry) => (recordedAt.get(entry) ?? Infinity) <= step);
      const released = releasedAt.get(t.id);
      return recorded && (released === undefined || step < released);
    },
  };
}
