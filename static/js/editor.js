// editor.js — the model editor in <aside id="editor-panel">: form and JSON tabs over one draft spec plus its
// checkpoint request, re-tracing on every change, problems at their fields, undo/redo over {spec, checkpoint}
// pairs that traced, and the saved-bytes table. Talks to the explorer only through events: listens to
// "tapescope:spec", "tapescope:checkpoint" (a schedule picked on the Pareto panel) and "tapescope:recompute-toggle" (a
// tensor clicked for the manual set); dispatches "tapescope:tracing" when a request starts, "tapescope:trace" with the
// answer and "tapescope:manual-set" whenever the checkpoint request changes. Any spec edit clears the manual set.
import { el } from "./dom.js";
import { formatBytes } from "./format.js";
import { checkpointFields, syncBudgetReadout } from "./editor-checkpoint.js";
import { syncControls } from "./editor-controls.js";
import { renderForm } from "./editor-form.js";
import { createHistory } from "./editor-history.js";
import { clearProblems, problemsOf, showProblems } from "./editor-problems.js";
import { renderSavedTable } from "./editor-saved.js";
import { clone, getAt, same, setAt } from "./editor-spec.js";
import { createTracer } from "./editor-tracer.js";
import { NO_CHECKPOINT, normalizeRequest } from "./schedule.js";

const panel = document.getElementById("editor-panel");

function button(text, props, onClick) {
  const node = el("button", { type: "button", ...props, text });
  node.addEventListener("click", onClick);
  return node;
}

// ------------------------------ the panel's skeleton ------------------------------

const ui = {};
function build() {
  ui.undo = button("↶ Undo", { "data-testid": "undo", title: "Undo (Ctrl+Z)", disabled: true }, () => undo());
  ui.redo = button("↷ Redo", { "data-testid": "redo", title: "Redo (Ctrl+Shift+Z)", disabled: true }, () => redo());
  ui.status = el("span", { class: "editor-status", "data-testid": "trace-status", role: "status", "aria-live": "polite", text: "waiting for a model…" });
  ui.general = el("div", { class: "editor-general", "data-field": "spec" });
  ui.tabForm = el("button", { type: "button", role: "tab", id: "editor-tab-form", "aria-controls": "editor-form", "aria-selected": "true", text: "Form" });
  ui.tabJson = el("button", { type: "button", role: "tab", id: "editor-tab-json", "aria-controls": "editor-json", "aria-selected": "false", "data-testid": "json-tab", text: "JSON" });
  ui.form = el("div", { class: "editor-form", id: "editor-form", role: "tabpanel", "aria-labelledby": "editor-tab-form" });
  ui.json = el("textarea", { "data-testid": "spec-json", "aria-label": "The spec as JSON", spellcheck: "false", rows: 18 });
  ui.apply = button("Apply JSON", { "data-testid": "apply", class: "primary" }, () => applyJson());
  ui.jsonProblems = el("div", { class: "json-problems" });
  ui.jsonPane = el("div", { class: "editor-json", id: "editor-json", role: "tabpanel", "aria-labelledby": "editor-tab-json", hidden: true },
    ui.json, el("div", { class: "json-actions" }, ui.apply, el("span", { class: "hint", text: "JSON.parse only — nothing is evaluated" })), ui.jsonProblems);
  ui.table = el("table", { class: "saved-bytes", "data-testid": "saved-bytes-table" });
  panel.replaceChildren(
    el("header", { class: "editor-head" }, el("h2", { text: "Edit the model" }), ui.undo, ui.redo),
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
  ui.json.addEventListener("input", () => { ui.jsonDirty = true; });
}

function showTab(which) {
  const json = which === "json";
  ui.tabForm.setAttribute("aria-selected", String(!json));
  ui.tabJson.setAttribute("aria-selected", String(json));
  ui.form.hidden = json;
  ui.jsonPane.hidden = !json;
  if (json) writeJson(true);
}

// ------------------------------ state ------------------------------

const state = {
  draft: null, now: null, before: null, readOnly: false, selection: new Set(), lastAdded: "linear",
  checkpoint: { ...NO_CHECKPOINT, k: 2 },   // the form's state: k and budget are remembered across policies
};
const history = createHistory();
const tracer = createTracer({
  onPending: () => {
    setStatus("tracing…", "busy");
    document.dispatchEvent(new CustomEvent("tapescope:tracing"));   // the explorer holds back its schedules request
  },
  onResult: traced,
});

function setStatus(text, kind = "") {
  ui.status.textContent = text;
  ui.status.dataset.state = kind;
  panel.dataset.tracing = String(kind === "busy");
}

function writeJson(force = false) {
  if (!force && ui.jsonDirty && document.activeElement === ui.json) return;
  ui.json.value = state.draft ? JSON.stringify(state.draft, null, 2) : "";
  ui.jsonDirty = false;
}

/** What one trace request carries, and what one history entry holds. */
const entry = () => ({ spec: clone(state.draft), checkpoint: normalizeRequest(state.checkpoint) });

function updateButtons() {
  const off = state.readOnly;
  ui.undo.disabled = off || !(history.canUndo() || (history.current() && !history.isCurrent(entry())));
  ui.redo.disabled = off || !history.canRedo();
}

const ctx = {
  selection: state.selection,
  value(path, value, mode = "debounce") {
    const next = clone(state.draft);
    setAt(next, path, value);
    if (value === "" && /\.name$/.test(path)) delete getAt(next, path.slice(0, -".name".length)).name;
    commit(next, { structural: false, mode });
  },
  structural(mutate) {
    const next = clone(state.draft);
    try {
      mutate(next);
    } catch (error) {
      clearProblems(panel);
      showProblems(ui.form, ui.general, [{ path: "layers", message: error.message }]);
      return;
    }
    state.selection.clear();
    commit(next, { structural: true, mode: "debounce" });
  },
  selectionChanged: () => renderFormNow(),
  checkpointFields: () => checkpointFields(state.checkpoint,
    { onChange: setCheckpoint, blocks: blockCount(), trace: state.now ?? window.tapescope?.getTrace?.() }),
};

/** L, the model's block count, read off the last trace's every_k k=1 schedule (one region per block). */
function blockCount() {
  const schedules = (state.now ?? window.tapescope?.getTrace?.())?.schedules ?? [];
  const each = schedules.find((s) => s.policy === "every_k" && s.params?.k === 1);
  return each ? each.block_regions.length : null;
}

/** A budget worth trying: halfway between the lowest reachable peak and no checkpointing, in whole KiB. */
function defaultBudget() {
  const trace = state.now ?? window.tapescope?.getTrace?.();
  const peaks = (trace?.pareto ?? []).map((p) => p.predicted_peak_bytes);
  const middle = peaks.length ? (Math.min(...peaks) + Math.max(...peaks)) / 2 : trace?.summary?.peak_bytes ?? 1 << 20;
  return Math.max(1024, Math.ceil(middle / 1024) * 1024);
}

/** Replace only the checkpoint fieldset (its controls depend on the policy), keeping keyboard focus in place. */
function renderCheckpoint() {
  const old = ui.form.querySelector("fieldset.checkpoint-fields");
  if (!old) { renderFormNow(); return; }
  const focused = old.contains(document.activeElement) ? document.activeElement.dataset.path : null;
  const fresh = ctx.checkpointFields();
  old.replaceWith(fresh);
  if (state.readOnly) fresh.querySelectorAll("input, select").forEach((n) => { n.disabled = true; });
  if (focused) fresh.querySelector(`[data-path="${focused}"]`)?.focus();
}

/** A checkpoint change from its controls or a picked schedule: show it and re-trace the same spec with it. */
function setCheckpoint(change, mode = "now") {
  if (state.readOnly || !state.draft) return;
  const next = { ...state.checkpoint, ...change };
  if (next.policy === "every_k" && !(Number.isInteger(next.k) && next.k >= 1)) next.k = Math.min(2, blockCount() ?? 2);
  if (next.policy === "optimal" && !(Number.isInteger(next.budget_bytes) && next.budget_bytes > 0)) next.budget_bytes = defaultBudget();
  if (!Array.isArray(next.recompute)) next.recompute = [];
  const redraw = next.policy !== state.checkpoint.policy || !same(next.recompute, state.checkpoint.recompute ?? []);
  state.checkpoint = next;
  announce();
  if (redraw) renderCheckpoint();
  else { syncControls(ui.form, view()); syncBudgetReadout(ui.form, next); }
  tracer.request(entry(), {}, mode);
  updateButtons();
}

/** The draft with its checkpoint beside it, for controls bound to "checkpoint.*" paths. */
const view = () => ({ ...state.draft, checkpoint: state.checkpoint });

function renderFormNow() {
  renderForm(ui.form, state.draft, ctx);
  panel.classList.toggle("read-only", state.readOnly);
  ui.form.querySelectorAll("input, select, button").forEach((n) => { if (state.readOnly) n.disabled = true; });
}

/** The explorer's copy of the request (the inspector's button and the graph's picked nodes follow it). */
function announce() {
  document.dispatchEvent(new CustomEvent("tapescope:manual-set", { detail: { checkpoint: normalizeRequest(state.checkpoint) } }));
}

/** A spec edit may renumber the tensors: the manual set starts over (the hint under it says so). */
function clearManualSet() {
  if (!state.checkpoint.recompute?.length) return false;
  state.checkpoint = { ...state.checkpoint, recompute: [] };
  announce();
  return true;
}

/** A new draft from the form or the JSON: show it and re-trace it. */
function commit(next, { structural, mode }) {
  state.draft = next;
  writeJson();
  const cleared = clearManualSet();
  if (structural) renderFormNow(); else syncControls(ui.form, view());
  if (cleared && !structural) renderCheckpoint();
  tracer.request(entry(), {}, mode);
  updateButtons();
}

/** Go to a {spec, checkpoint} (undo, redo, applied JSON, a preset): redraw everything from it. */
function load({ spec, checkpoint }, mode = "now") {
  state.draft = clone(spec);
  if (checkpoint) state.checkpoint = { ...state.checkpoint, ...normalizeRequest(checkpoint) };
  announce();
  state.selection.clear();
  writeJson(true);
  renderFormNow();
  if (mode) tracer.request(entry(), {}, mode);
  updateButtons();
}

function traced({ ok, status, body, spec, checkpoint, ms }) {
  clearProblems(panel);
  ui.jsonProblems.replaceChildren();
  if (!ok) {
    const problems = problemsOf({ status, body });
    showProblems(ui.form, ui.general, problems);
    for (const p of problems) ui.jsonProblems.append(el("p", {}, el("code", { text: p.path }), ` ${p.message}`));
    setStatus(status === 413 ? "over a size cap — the last good trace stays" : "not traced: see the marked fields — the last good trace stays", "error");
    updateButtons();
    return;
  }
  history.push({ spec, checkpoint });
  state.before = state.now ?? window.tapescope?.getTrace?.() ?? null;
  state.now = body;
  renderSavedTable(ui.table, state.now, state.before);
  setStatus(`traced in ${Math.round(ms)} ms · peak ${formatBytes(body.summary.peak_bytes)}`, "ok");
  updateButtons();
  document.dispatchEvent(new CustomEvent("tapescope:trace", { detail: { trace: body, spec, checkpoint } }));
}

// ------------------------------ undo, redo, JSON ------------------------------

function undo() {
  if (state.readOnly) return;
  const target = history.isCurrent(entry()) ? history.undo() : history.current();
  if (target) load(target);
}

function redo() {
  if (state.readOnly) return;
  const target = history.redo();
  if (target) load(target);
}

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
  if (same(spec, state.draft)) { tracer.request(entry(), {}, "now"); return; }
  clearManualSet();
  load({ spec, checkpoint: state.checkpoint });
}

function editableTarget(target) {
  return target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
}

document.addEventListener("keydown", (event) => {
  if (!(event.ctrlKey || event.metaKey) || event.altKey || editableTarget(event.target)) return;
  const key = event.key.toLowerCase();
  if (key === "z" && !event.shiftKey) { event.preventDefault(); undo(); }
  else if ((key === "z" && event.shiftKey) || key === "y") { event.preventDefault(); redo(); }
});

// ------------------------------ the explorer's side ------------------------------

document.addEventListener("tapescope:spec", (event) => {
  const { spec, checkpoint, readOnly } = event.detail ?? {};
  if (!spec) return;
  state.readOnly = Boolean(readOnly);
  state.now = window.tapescope?.getTrace?.() ?? null;
  state.before = null;
  const shown = { spec, checkpoint: normalizeRequest(checkpoint ?? state.checkpoint) };
  history.push(shown);
  load(shown, null);
  clearProblems(panel);
  if (state.now) renderSavedTable(ui.table, state.now, null);
  setStatus(readOnly ? "a shared snapshot: make a copy to edit" : "edit anything: the trace follows", "ok");
});

document.addEventListener("tapescope:recompute-toggle", (event) => {
  const tensor = event.detail?.tensor;
  if (state.readOnly || state.checkpoint.policy !== "manual" || !Number.isInteger(tensor)) return;
  const ids = state.checkpoint.recompute ?? [];
  setCheckpoint({ recompute: ids.includes(tensor) ? ids.filter((t) => t !== tensor) : [...ids, tensor] }, "debounce");
});

document.addEventListener("tapescope:checkpoint", (event) => {
  const checkpoint = event.detail?.checkpoint;
  if (checkpoint) setCheckpoint(normalizeRequest(checkpoint), "now");
});

build();
window.tapescope = Object.assign(window.tapescope ?? {}, {
  editor: { getSpec: () => clone(state.draft), getCheckpoint: () => normalizeRequest(state.checkpoint), undo, redo },
});
