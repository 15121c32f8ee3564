// schedule.js — checkpoint schedules in words and as requests: a schedule's label, the request that re-runs it,
// the one-line summary ("sqrt: peak 1.4 MiB → 924.8 KiB, +100% FLOPs, grads bitwise equal") and the gradient mismatch.
import { formatBytes } from "../lib/format.js";

/** The policies a person picks from (manual's tensors are then picked by clicking op nodes). */
export const POLICY_OPTIONS = ["none", "every_k", "sqrt", "selective", "optimal", "manual"];

export const NO_CHECKPOINT = Object.freeze({ policy: "none", preserve_rng_state: true });

/** An optimal schedule by its budget, to two decimals: the Pareto sweep's budgets can be 6% apart (1,189,388 and
 * 1,123,852 B both read "1.1 MiB" at one). */
export const optimalLabel = (budgetBytes) => `optimal ≤ ${formatBytes(budgetBytes, { digits: 2 })}`;

export function scheduleLabel(schedule) {
  const params = schedule.params || {};
  if (schedule.policy === "every_k") return `every_k k=${params.k}`;
  if (schedule.policy === "optimal") return optimalLabel(params.budget_bytes);
  if (schedule.policy === "manual") {
    const n = (params.recompute || []).length;
    return `manual (${n} tensor${n === 1 ? "" : "s"})`;
  }
  return schedule.policy;
}

/** Only the fields the policy takes: {policy, k?, budget_bytes?, recompute?, preserve_rng_state}. */
export function normalizeRequest(request) {
  const source = request || NO_CHECKPOINT;
  const out = { policy: source.policy || "none" };
  if (out.policy === "every_k") out.k = source.k;
  if (out.policy === "optimal") out.budget_bytes = source.budget_bytes;
  if (out.policy === "manual") out.recompute = Array.isArray(source.recompute) ? [...source.recompute] : [];
  out.preserve_rng_state = source.preserve_rng_state !== false;
  return out;
}

/** What goes on the wire with the spec: the request, or null for no checkpointing. The server takes a missing
 * checkpoint as "none" and answers the same run without executing every schedule (~3× faster on transformer-tiny,
 * which keeps the editor's sliders under their 300 ms budget); the explorer fetches the schedules separately then. */
export function wireRequest(request) {
  const normalized = normalizeRequest(request);
  return normalized.policy === "none" ? null : normalized;
}

/** The request that re-runs a schedule of a trace ({policy, params}), keeping `preserve` for the RNG. */
export function requestFor(schedule, preserve = schedule.preserve_rng_state !== false) {
  return normalizeRequest({ policy: schedule.policy, ...(schedule.params || {}), preserve_rng_state: preserve });
}

export const sameSchedule = (a, b) => Boolean(a && b) && a.policy === b.policy
  && JSON.stringify(a.params || {}) === JSON.stringify(b.params || {});

/** A fraction as a percentage with two significant digits: "0.43%", "4.3%", "100%"; never "0%" for a non-zero value. */
export function percentText(fraction) {
  const percent = fraction * 100;
  if (percent === 0) return "0%";
  return `${Math.abs(percent) >= 9.95 ? Math.round(percent) : percent.toPrecision(2)}%`;
}

export const overheadText = (overhead) => (overhead === 0 ? "no recompute" : `+${percentText(overhead)} FLOPs`);

/** The largest per-parameter difference when the checkpointed gradients differ, else null. */
export function gradMismatch(schedule) {
  if (!schedule || schedule.grads_match !== false) return null;
  const [param, max] = Object.entries(schedule.grad_mismatch || {})
    .reduce((best, next) => (next[1] > best[1] ? next : best), ["", 0]);
  const why = schedule.preserve_rng_state === false
    ? "dropout masks were not replayed (preserve RNG state is off)"
    : "the recompute did not reproduce the forward";
  return { param, max, text: `gradients differ: max |Δ| ${max.toExponential(1)}${param ? ` in ${param}` : ""} — ${why}` };
}

/** The one-line summary of a trace's schedule against no checkpointing, or "" for a trace without one. */
export function scheduleSummary(trace) {
  const schedule = trace?.schedule;
  if (!schedule) return "";
  const peak = schedule.executed_peak_bytes ?? trace.summary.peak_bytes;
  if (schedule.policy === "none") {
    return `no checkpointing: peak ${formatBytes(peak)}, no recompute`;
  }
  const base = (trace.schedules || []).find((s) => s.policy === "none");
  const from = base ? `${formatBytes(base.executed_peak_bytes)} → ` : "";
  const predicted = schedule.predicted_peak_bytes !== peak ? ` (predicted ${formatBytes(schedule.predicted_peak_bytes)})` : "";
  const grads = schedule.grads_match === false ? "gradients DIFFER"
    : schedule.preserve_rng_state === false ? "grads bitwise equal (nothing random to replay)" : "grads bitwise equal";
  const budget = schedule.policy === "optimal" && schedule.feasible === false
    ? " — no schedule fits the budget: this is the lowest peak" : "";
  const solver = schedule.solver?.status && schedule.solver.status !== "optimal"
    ? ` (solver: ${schedule.solver.status}, gap ${(100 * (schedule.solver.gap ?? 0)).toFixed(1)}%)` : "";
  return `${scheduleLabel(schedule)}: peak ${from}${formatBytes(peak)}${predicted}, ${overheadText(schedule.overhead)}, ${grads}${budget}${solver}`;
}
