// underflow.js — what float16 does to the master gradients under mixed precision: for each gradient, the share of its
// elements that are nonzero in float32 but 0 in float16, without the loss scale and with it (the trace's
// tensor.underflow, measured by the engine's scaler when it unscaled them). Shown in the inspector for a gradient or
// its parameter, beside every other gradient's figures.
import { el } from "../../lib/dom.js";

const percent = (fraction) => `${(100 * fraction).toFixed(fraction > 0 && fraction < 0.001 ? 2 : 1)}%`;

const measuredByTrace = new WeakMap();   // trace -> {grads: gradients with underflow figures, byParam: param id -> grad}

/** A trace's gradients with underflow figures, and each one's parameter: gathered once per trace, not per step. */
function measured(trace) {
  let found = measuredByTrace.get(trace);
  if (!found) {
    const grads = trace.tensors.filter((t) => t.underflow);
    const byParam = new Map();
    for (const t of grads) if (t.grad_of !== undefined && !byParam.has(t.grad_of)) byParam.set(t.grad_of, t);   // the first, as find did
    found = { grads, byParam };
    measuredByTrace.set(trace, found);
  }
  return found;
}

/** The gradient record with underflow figures for a selected tensor: itself, or the grad of a parameter. */
function gradientOf(tensor, trace) {
  if (tensor.underflow) return tensor;
  if (tensor.kind !== "param") return null;
  return measured(trace).byParam.get(tensor.id) ?? null;
}

/** The inspector's underflow block for `tensor`, or null when the run has none for it. */
export function underflowBlock(tensor, trace) {
  const grad = tensor && gradientOf(tensor, trace);
  if (!grad) return null;
  const scale = trace.summary.loss_scale?.scale ?? 1;
  const scaleText = `×${scale.toLocaleString("en")}`;
  const rows = measured(trace).grads.map((t) => el("tr", { class: t.id === grad.id ? "selected" : "" },
    el("td", { text: t.name }), el("td", { text: percent(t.underflow.unscaled) }), el("td", { text: percent(t.underflow.scaled) })));
  return el("section", { class: "underflow", "data-testid": "underflow" },
    el("h3", { text: "float16 underflow" }),
    el("p", { "data-testid": "underflow-selected",
      text: `${grad.name}: ${percent(grad.underflow.unscaled)} of its elements become 0 in float16 without the loss scale, ` +
        `${percent(grad.underflow.scaled)} with it (${scaleText}).` }),
    el("table", { class: "underflow-table" },
      el("thead", {}, el("tr", {}, el("th", { text: "gradient" }), el("th", { text: "unscaled" }), el("th", { text: `scaled ${scaleText}` }))),
      el("tbody", {}, ...rows)));
}
