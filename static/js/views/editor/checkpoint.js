// checkpoint.js — the editor's "Checkpointing" fieldset: the policy, k (every_k), the budget in bytes with a
// KiB/MiB readout (optimal), the picked tensors (manual, views/editor/manual.js) and "preserve RNG state". Controls carry data-path "checkpoint.*", so the server's
// problems ("checkpoint.k") land at them; onChange(change, mode) receives the changed fields.
import { el } from "../../lib/dom.js";
import { checkControl, numberControl, selectControl } from "./controls.js";
import { manualSet } from "./manual.js";
import { formatBytes } from "../../lib/format.js";
import { POLICY_OPTIONS } from "../../model/schedule.js";

const HINTS = {
  none: "Backward keeps every activation it needs.",
  every_k: "Checkpoint the blocks in segments of k (checkpoint_sequential): only each segment's input is kept.",
  sqrt: "Segments of k = round(√L) blocks: the textbook default.",
  selective: "Recompute only blocks whose saved bytes are mostly cheap to redo (not matmul outputs).",
  optimal: "The least recompute whose predicted peak fits the budget.",
  manual: "Click op nodes in the graph (or use the inspector's button) to recompute their outputs instead of saving them.",
};

const budgetText = (bytes) => (Number.isFinite(bytes) && bytes > 0 ? `= ${formatBytes(bytes)}` : "bytes");

/** The fieldset for `checkpoint` ({policy, k, budget_bytes, recompute, preserve_rng_state}); blocks = L, when known;
 * trace names the manual set's tensors. */
export function checkpointFields(checkpoint, { onChange, blocks, trace }) {
  const box = el("fieldset", { class: "checkpoint-fields", "data-field": "checkpoint" },
    el("legend", { text: "Checkpointing" }));
  const policy = selectControl("policy", "checkpoint.policy", checkpoint.policy, POLICY_OPTIONS,
    (path, value) => onChange({ policy: value }, "now"));
  const select = policy.querySelector("select");
  select.dataset.testid = "checkpoint-policy";
  select.setAttribute("aria-label", "Checkpoint policy");
  box.append(policy);
  if (checkpoint.policy === "every_k") {
    const k = numberControl("k", "checkpoint.k", checkpoint.k, (path, value) => onChange({ k: value }, "debounce"),
      { min: 1, max: blocks || undefined });
    k.querySelector("input").dataset.testid = "checkpoint-k";
    k.title = blocks ? `blocks per segment, 1 to L = ${blocks}` : "blocks per segment";
    box.append(k);
  }
  if (checkpoint.policy === "optimal") {
    const readout = el("output", { class: "budget-readout", "aria-live": "polite", text: budgetText(checkpoint.budget_bytes) });
    const budget = numberControl("budget", "checkpoint.budget_bytes", checkpoint.budget_bytes,
      (path, value) => {
        readout.textContent = budgetText(value);
        onChange({ budget_bytes: value }, "debounce");
      }, { min: 1, step: 1024 });
    const input = budget.querySelector("input");
    input.dataset.testid = "checkpoint-budget";
    input.setAttribute("aria-label", "Memory budget in bytes");
    budget.classList.add("budget");
    budget.append(readout);
    box.append(budget);
  }
  const ids = checkpoint.recompute ?? [];
  const manual = checkpoint.policy === "manual"
    ? manualSet(ids, { trace, onRemove: (id) => onChange({ recompute: ids.filter((t) => t !== id) }, "debounce") }) : null;
  const rng = checkControl("preserve RNG state", "checkpoint.preserve_rng_state", checkpoint.preserve_rng_state !== false,
    (path, value) => onChange({ preserve_rng_state: value }, "now"));
  rng.querySelector("input").dataset.testid = "checkpoint-rng";
  rng.title = "Replay the random draws (dropout masks) when a region is recomputed";
  box.append(rng, el("p", { class: "hint checkpoint-hint", text: HINTS[checkpoint.policy] ?? "" }));
  if (manual) box.append(manual);
  return box;
}

/** Keep the budget readout in step when syncControls rewrites the bytes (undo, a clicked schedule). */
export function syncBudgetReadout(root, checkpoint) {
  const readout = root.querySelector(".budget-readout");
  if (readout) readout.textContent = budgetText(checkpoint.budget_bytes);
}
