// manual.js — the "manual" policy's recompute set in the Checkpointing fieldset: one chip per tensor picked in
// the graph or the inspector, each with a remove button. The list carries data-field="checkpoint.recompute", so the
// server's refusals ("tensor 53 (t12) cannot be recomputed") land right after it.
import { el } from "../../lib/dom.js";
import { recomputeLabel } from "../../model/recompute-pick.js";

/** A minimal index over `trace` for labels: tensors by id plus the tape. */
function lookup(trace) {
  if (!trace) return null;
  const tensors = new Map(trace.tensors.map((t) => [t.id, t]));
  return { trace, tensor: (id) => tensors.get(id) };
}

/** The chips for `ids`; onRemove(id) drops one. `trace` names them (the ids are the un-checkpointed run's). */
export function manualSet(ids, { trace, onRemove, disabled }) {
  const index = lookup(trace);
  const list = el("ul", { class: "manual-set", "data-testid": "manual-set", "data-field": "checkpoint.recompute",
    "aria-label": "Tensors recomputed instead of saved" });
  for (const id of ids) {
    const label = recomputeLabel(id, index);
    const remove = el("button", { type: "button", class: "chip-remove", "data-testid": "manual-remove", "data-tensor": id,
      "aria-label": `Save ${label} again`, title: "Save it again", disabled, text: "×" });
    remove.addEventListener("click", () => onRemove(id));
    list.append(el("li", { class: "chip", "data-tensor": id }, el("span", { class: "chip-text", text: label }), remove));
  }
  const empty = ids.length ? null
    : el("p", { class: "hint manual-empty", text: "Nothing picked yet: click op nodes in the graph to recompute their outputs." });
  return el("div", { class: "manual-box" }, list, empty,
    el("p", { class: "hint manual-reset", text: "Editing the model clears this set (tensor ids change with its shape)." }));
}
