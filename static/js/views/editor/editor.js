// editor.js — the model editor in <aside id="editor-panel">: form and JSON tabs over the workspace's draft spec and
// its checkpoint request, problems at their fields, the undo/redo buttons and the saved-bytes table. It holds no
// copy of the workspace: edits go to workspace.js (which traces, keeps the history and saves) and the panel redraws
// from what the workspace announces. Any spec edit clears the manual set (the workspace does it).
import { el } from "../../lib/dom.js";
import { formatBytes } from "../../lib/format.js";
import { drawMarks, noteRefusal, noteTraced } from "./dial-caps.js";
import { checkpointFields, syncBudgetReadout } from "./checkpoint.js";
import { syncControls } from "./controls.js";
import { renderForm } from "./form.js";
import { clearProblems, problemsOf, showProblems } from "./problems.js";
import { renderSavedTable } from "./saved.js";
import { describePeakDelta } from "../../model/peak-delta.js";
import { clone, getAt, same, setAt } from "../../model/spec.js";
import * as workspace from "../../state/workspace.js";

const panel = document.getElementById("editor-panel");

function button(text, props, onClick) {
  const node = el("button", { type: "button", ...props, text });
  node.addEventListener("click", onClick);
  return node;
}

// ------------------------------ the panel's skeleton ------------------------------

const ui = {};
function build() {
  ui.undo = button("↶ Undo", { "data-testid": "undo", title: "Undo (Ctrl+Z)", disabled: true }, () => workspace.undo());
  ui.redo = button("↷ Redo", { "data-testid": "redo", title: "Redo (Ctrl+Shift+Z)", disabled: true }, () => workspace.redo());
  ui.status = el("span", { class: "editor-status", "data-testid": "trace-status", role: "status", "aria-live": "polite", text: "waiting for a model…" });
  ui.general = el("div", { class: "editor-general", "data-field": "spec" });
  ui.tabForm = el("button", { type: "button", role: "tab", id: "editor-tab-form", "aria-controls": "editor-form", "aria-selected": "true", text: "Form" });
  ui.tabJson = el("button", { type: "button", role: "tab", id: "editor-tab-json", "aria-controls": "editor-json", "aria-selected": "false", "data-testid": "json-tab", text: "JSON" });
  ui.form = el("div", { class: "editor-form", id: "editor-form", role: "tabpanel", "aria-labelledby": "editor-tab-form" });
  ui.json = el("textarea", { "data-testid": "spec-json", "aria-label": "The spec as JSON", spellcheck: "false", rows: 18 });
  ui.apply = button("Apply JSON", { "data-testid": "apply", class: "primary" }, () => applyJson());
  ui.jsonProblems = el("div", { class: "json-problems" });
  ui.discard = button("Discard", { "data-testid": "json-discard" }, () => { ui.jsonDirty = false; writeJson(); });
  ui.unapplied = el("p", { class: "json-unapplied", "data-testid": "json-unapplied", role: "status", hidden: true },
    "Unapplied: this text is not the traced model. Apply JSON to trace it, or ", ui.discard, " it for the model's spec.");
  ui.jsonPane = el("div", { class: "editor-json", id: "editor-json", role: "tabpanel", "aria-labelledby": "editor-tab-json", hidden: true },
    ui.json, ui.unapplied,
    el("div", { class: "json-actions" }, ui.apply, el("span", { class: "hint", text: "JSON.parse only — nothing is evaluated" })), ui.jsonProblems);
  ui.table = el("table", { class: "saved-bytes", "data-testid": "saved-bytes-table" });
  ui.fold = button("⇤", { "data-testid": "editor-fold", "aria-label": "Fold the editor into a rail", title: "Fold the editor into a rail: the graph gets its width" }, () => setFolded(true));
  ui.rail = button("Edit the model ⇥", { class: "editor-rail", "data-testid": "editor-unfold", "aria-label": "Open the model editor", hidden: true }, () => setFolded(false));
  panel.replaceChildren(
    ui.rail,
    el("header", { class: "editor-head" }, el("h2", { text: "Edit the model" }), ui.undo, ui.redo, ui.fold),
    ui.status, ui.general,
    el("div", { class: "editor-tabs", role: "tablist", "aria-label": "Editor views" }, ui.tabForm, ui.tabJson),
    ui.form, ui.jsonPane,
    el("section", { class: "editor-saved", "aria-label": "Saved bytes per layer" },
      el("h3", { text: "Saved for backward, per layer" }),
      el("p", { class: "hint", text: "Tensors the tape holds, counted by the layer that made them (inputs and weights are not counted)." }),
      ui.table),
  );
  ui.tabForm.addEventListener("click", () => showTab("form"));
  ui.tabJson.addEventListener("click", () => showTab("json"));
  ui.json.addEventListener("input", () => {
    ui.jsonDirty = ui.json.value !== specText();
    ui.unapplied.hidden = !ui.jsonDirty;
  });
  // Read-only (a snapshot): the panel still scrolls and its tabs still click; only the inputs are disabled.
}

const FOLDED_KEY = "tapescope.editorFolded";

/** Fold the editor into a narrow rail (the graph panel takes its width; views/graph/nav.js re-fits a fitted view), or open
 * it again. The person's choice holds across reloads. */
function setFolded(folded, { focus = true } = {}) {
  panel.classList.toggle("folded", folded);
  ui.rail.hidden = !folded;
  try { localStorage.setItem(FOLDED_KEY, folded ? "1" : ""); } catch { /* storage may be off: the fold still works */ }
  if (focus) (folded ? ui.rail : ui.fold).focus({ preventScroll: true });
}

function showTab(which) {
  const json = which === "json";
  ui.tabForm.setAttribute("aria-selected", String(!json));
  ui.tabJson.setAttribute("aria-selected", String(json));
  ui.form.hidden = json;
  ui.jsonPane.hidden = !json;
  if (json) writeJson();
}

// ------------------------------ state ------------------------------

const ws = workspace.state;
const local = { selection: new Set(), lastAdded: "linear", rendered: null };   // the form's own: picked layers

function setStatus(text, kind = "") {
  ui.status.textContent = text;
  ui.status.dataset.state = kind;
  panel.dataset.tracing = String(kind === "busy");
}

const specText = () => (ws.spec ? JSON.stringify(ws.spec, null, 2) : "");

/** The JSON tab shows the model's spec, unless it holds text the person typed and has not applied: that text stays
 * (a tab switch, a form edit, an undo never replace it), marked unapplied, until Apply JSON or Discard. */
function writeJson() {
  if (!ui.jsonDirty) ui.json.value = specText();
  ui.jsonDirty = ui.jsonDirty && ui.json.value !== specText();
  ui.unapplied.hidden = !ui.jsonDirty;
}

function updateButtons() {
  ui.undo.disabled = !workspace.canUndo();
  ui.redo.disabled = !workspace.canRedo();
}

const ctx = {
  selection: local.selection,
  get schema() { return ws.schema; },
  get lastAdded() { return local.lastAdded; },
  set lastAdded(kind) { local.lastAdded = kind; },
  value(path, value, mode = "debounce") {
    const next = clone(ws.spec);
    setAt(next, path, value);
    if (value === "" && /\.name$/.test(path)) delete getAt(next, path.slice(0, -".name".length)).name;
    workspace.edit(next, mode);
    writeJson();
    syncControls(ui.form, view());
  },
  structural(mutate) {
    const next = clone(ws.spec);
    try {
      mutate(next);
    } catch (error) {
      clearProblems(panel);
      showProblems(ui.form, ui.general, [{ path: "layers", message: error.message }]);
      return;
    }
    local.selection.clear();
    workspace.edit(next, "debounce");
    writeJson();
    renderFormNow();
  },
  selectionChanged: () => renderFormNow(),
  checkpointFields: () => checkpointFields(ws.checkpoint, { onChange: setCheckpoint, blocks: blockCount(), trace: ws.trace }),
};

/** L, the model's block count, read off the last trace's every_k k=1 schedule (one region per block). */
function blockCount() {
  const each = (ws.trace?.schedules ?? []).find((s) => s.policy === "every_k" && s.params?.k === 1);
  return each ? each.block_regions.length : null;
}

/** A budget worth trying: halfway between the lowest reachable peak and no checkpointing, in whole KiB. */
function defaultBudget() {
  const peaks = (ws.trace?.pareto ?? []).map((p) => p.predicted_peak_bytes);
  const middle = peaks.length ? (Math.min(...peaks) + Math.max(...peaks)) / 2 : ws.trace?.summary?.peak_bytes ?? 1 << 20;
  return Math.max(1024, Math.ceil(middle / 1024) * 1024);
}

/** Replace only the checkpoint fieldset (its controls depend on the policy), keeping keyboard focus in place. */
function renderCheckpoint() {
  local.rendered = { policy: ws.checkpoint.policy, recompute: [...(ws.checkpoint.recompute ?? [])] };
  const old = ui.form.querySelector("fieldset.checkpoint-fields");
  if (!old) { renderFormNow(); return; }
  const focused = old.contains(document.activeElement) ? document.activeElement.dataset.path : null;
  const fresh = ctx.checkpointFields();
  old.replaceWith(fresh);
  if (ws.readOnly) fresh.querySelectorAll("input, select").forEach((n) => { n.disabled = true; });
  if (focused) fresh.querySelector(`[data-path="${focused}"]`)?.focus();
}

/** The workspace's checkpoint changed: a new policy or manual set redraws the fieldset, anything else syncs it. */
function checkpointChanged() {
  const shown = local.rendered;
  if (!shown || shown.policy !== ws.checkpoint.policy || !same(shown.recompute, ws.checkpoint.recompute ?? [])) renderCheckpoint();
  else { syncControls(ui.form, view()); syncBudgetReadout(ui.form, ws.checkpoint); }
}

/** A change from the checkpoint controls: fill in k and the budget when a newly chosen policy needs them, then
 * re-trace. What a person typed goes as typed (0, -3, 2.5, nothing): the server's problem then names the field. */
function setCheckpoint(change, mode = "now") {
  if (ws.readOnly || !ws.spec) return;
  const next = { ...ws.checkpoint, ...change };
  const usable = (value) => Number.isInteger(value) && value >= 1;
  if (next.policy === "every_k" && !("k" in change) && !usable(next.k)) next.k = Math.min(2, blockCount() ?? 2);
  if (next.policy === "optimal" && !("budget_bytes" in change) && !usable(next.budget_bytes)) next.budget_bytes = defaultBudget();
  workspace.setCheckpoint(next, mode);
}

/** The draft with its checkpoint beside it, for controls bound to "checkpoint.*" paths. */
const view = () => ({ ...ws.spec, checkpoint: ws.checkpoint });

function renderFormNow() {
  if (!ws.spec || !ws.schema) return;
  local.rendered = { policy: ws.checkpoint.policy, recompute: [...(ws.checkpoint.recompute ?? [])] };
  renderForm(ui.form, ws.spec, ctx);
  drawMarks(ui.form, ws.spec);
  panel.classList.toggle("read-only", ws.readOnly);
  ui.form.querySelectorAll("input, select, button").forEach((n) => { if (ws.readOnly) n.disabled = true; });
  ui.json.readOnly = ws.readOnly;
  ui.apply.disabled = ws.readOnly;
  ui.discard.disabled = ws.readOnly;
}

function traced({ trace, previous, label, ms }) {
  clearProblems(panel);
  ui.jsonProblems.replaceChildren();
  renderSavedTable(ui.table, trace, previous);
  ui.table.dataset.compare = label || "";
  if (ws.traced?.spec) noteTraced(ui.form, ws.traced.spec);
  if (ws.readOnly) setStatus(ws.origin?.kind === "file" ? "a run opened from a file: read-only" : "a shared snapshot: make a copy to edit", "ok");
  else if (trace.error) setStatus(`traced in ${Math.round(ms)} ms · backward stopped at step ${trace.error.step}: an in-place op overwrote a saved tensor`, "error");
  else setStatus(`traced in ${Math.round(ms)} ms · ${peakText(trace, previous, label)}${optimizerPeakNote(trace)}`, "ok");
  updateButtons();
}

/** What the change did to the peak, said where the person made it (the chart's delta is below the fold at 1280×800):
 * against the pinned baseline or the run before, or the peak alone for a first run. */
function peakText(trace, previous, label) {
  if (!previous || previous === trace) return `peak ${formatBytes(trace.summary.peak_bytes)}`;
  return `${describePeakDelta(previous, trace)}${label?.startsWith("baseline") ? ` against the ${label}` : " from the run before"}`;
}

/** Under a checkpoint policy, a peak in the optimizer's update is out of checkpointing's reach: said, since the
 * delta alone reads "+0 B" with no reason (transformer-tiny). */
function optimizerPeakNote(trace) {
  const policy = trace.schedule?.policy;
  const step = trace.steps[trace.summary.peak_step];
  if (!policy || policy === "none" || step?.phase !== "optimizer") return "";
  return ` · the peak is in the optimizer's update (step ${step.index}), after backward freed the activations:`
    + " checkpointing cannot lower it";
}

function refused({ status, body }) {
  clearProblems(panel);
  ui.jsonProblems.replaceChildren();
  const problems = problemsOf({ status, body });
  showProblems(ui.form, ui.general, problems);
  drawMarks(ui.form, ws.spec);                  // an over-cap value was marked as it came ("cap-met")
  for (const p of problems) ui.jsonProblems.append(el("p", {}, el("code", { text: p.path }), ` ${p.message}`));
  setStatus(status === 413 ? "over a size cap — the last good trace stays" : "not traced: see the marked fields — the last good trace stays", "error");
  updateButtons();
}

workspace.subscribe((kind, detail) => {
  if (kind === "spec") {
    local.selection.clear();
    writeJson();
    renderFormNow();
    updateButtons();
  } else if (kind === "checkpoint") checkpointChanged();
  else if (kind === "tracing") setStatus("tracing…", "busy");
  else if (kind === "trace") traced(detail);
  else if (kind === "trace-failed") refused(detail);
  else if (kind === "cap-met") noteRefusal(ui.form, detail.asked, detail.settled, detail.failure);
  else if (kind === "compare") { renderSavedTable(ui.table, ws.trace, detail.previous); ui.table.dataset.compare = detail.label || ""; }
  else if (kind === "history") updateButtons();
});

// ------------------------------ JSON, keyboard ------------------------------

function applyJson() {
  clearProblems(panel);
  ui.jsonProblems.replaceChildren();
  let spec;
  try {
    spec = JSON.parse(ui.json.value);
  } catch (error) {
    ui.jsonProblems.append(el("p", { class: "field-error", "data-testid": "field-error", role: "alert" }, el("code", { text: "JSON" }), ` ${error.message}`));
    return;
  }
  if (spec === null || typeof spec !== "object" || Array.isArray(spec)) {
    ui.jsonProblems.append(el("p", { class: "field-error", "data-testid": "field-error", role: "alert" }, el("code", { text: "spec" }), " must be a JSON object {…}"));
    return;
  }
  const changed = !same(spec, ws.spec);
  ui.jsonDirty = false;                         // applied: the text is the model now, shown as the spec is written
  workspace.edit(spec, "now");
  if (changed) { local.selection.clear(); renderFormNow(); }
  writeJson();
}

function editableTarget(target) {
  return target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
}

document.addEventListener("keydown", (event) => {
  if (!(event.ctrlKey || event.metaKey) || event.altKey || editableTarget(event.target)) return;
  const key = event.key.toLowerCase();
  if (key === "z" && !event.shiftKey) { event.preventDefault(); workspace.undo(); }
  else if ((key === "z" && event.shiftKey) || key === "y") { event.preventDefault(); workspace.redo(); }
});

build();
let foldedBefore = "";
try { foldedBefore = localStorage.getItem(FOLDED_KEY) ?? ""; } catch { /* storage off: open */ }
if (foldedBefore) setFolded(true, { focus: false });
// The workspace may have opened before this module ran (module scripts can interleave with network answers): catch up.
if (ws.spec) { writeJson(); renderFormNow(); updateButtons(); }
if (ws.trace) traced({ trace: ws.trace, ms: 0, ...workspace.comparison() });
