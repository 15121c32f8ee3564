// explorer.js — wires the explorer page to the workspace (workspace.js, the one holder of state): opens it from the
// address, the session or a snapshot, draws each trace it shows (graph, memory with the comparison's ghost, lifetimes,
// sweep, Pareto) and drives every view from one step cursor. The Model control names what is loaded; "Pin as
// baseline" freezes a run to compare against; a save refused because another tab saved first shows a banner.
// Under the "manual" policy a click on an op node (or the inspector's button) toggles its output in the recompute set.
// A run.json dropped on the page or picked (run-file.js) opens read-only through the workspace's loadDocument.
import { readAddress } from "../state/address.js";
import { readDraft } from "../state/draft.js";
import { describeStep } from "../model/describe.js";
import { formatBytes, formatCount } from "../lib/format.js";
import { createGraphView } from "../views/graph/graph.js";
import { createInspector } from "../views/panels/inspector.js";
import { createLifetimeChart } from "../views/charts/lifetimes.js";
import { createMatrixChain } from "../views/panels/matrix-chain.js";
import { createMemoryChart } from "../views/charts/memory.js";
import { createModesView } from "../views/panels/modes-view.js";
import { showAllocator } from "../views/panels/allocator.js";
import { residentText } from "../model/resident.js";
import { createParetoPanel } from "../views/charts/pareto.js";
import { createPeakExplainer } from "../views/panels/peak-explainer.js";
import { describePeakDelta } from "../model/peak-delta.js";
import { createPlayer } from "../views/player.js";
import { recomputeChoice } from "../model/recompute-pick.js";
import { bindRunFile } from "../state/run-file.js";
import { forgetOpenedRun, keepOpenedRun, readOpenedRun } from "../state/opened-run.js";
import { showRunSource } from "../views/panels/run-source.js";
import { normalizeRequest, requestFor, wireRequest } from "../model/schedule.js";
import { createScheduleView } from "../views/panels/schedule-view.js";
import { bindMakeCopy, bindShare, bindShareRun } from "../views/panels/share.js";
import { createSweepPanel } from "../views/panels/sweep.js";
import { createRanksView } from "../views/panels/ranks.js";
import { indexTrace } from "../model/trace-index.js";
import { matchingStep } from "../model/step-match.js";
import * as workspace from "../state/workspace.js";

const byTestId = (id) => document.querySelector(`[data-testid="${id}"]`);
const root = document.querySelector(".explorer");
const snapshotId = root.dataset.snapshotId || null;

const ws = workspace.state;
const readOnly = () => ws.readOnly || root.dataset.readOnly === "true";     // a snapshot, or a run opened from a file
/** A run whose spec is not ours to send to the server: opened from a file here, or recorded with torch. */
const { isOffline: offline } = workspace;
const view = { index: null, manual: null, firstTrace: true };   // derived from the workspace's trace and checkpoint, never a copy
const statusLine = document.getElementById("status");

function setStatus(text, isError = false) {
  statusLine.textContent = text;
  statusLine.classList.toggle("error", isError);
}

function showBytes(element, bytes) {
  element.dataset.bytes = String(bytes);
  element.textContent = formatBytes(bytes);
  element.title = `${formatCount(bytes)} bytes`;        // on every step: one shared formatter
}

const graphControls = {
  fit: byTestId("graph-fit"), zoomIn: byTestId("graph-zoom-in"), zoomOut: byTestId("graph-zoom-out"),
  reset: byTestId("graph-actual-size"), minimap: byTestId("graph-minimap"),
  search: byTestId("graph-search"), searchCount: byTestId("graph-search-count"), foldAll: byTestId("graph-unfold-all"),
};
const graph = createGraphView(byTestId("graph"), {
  controls: graphControls,
  onSelect: (id) => { workspace.select(id); if (id?.[0] === "e") toggleRecompute(id, false); },
  onFoldChange: (unfolded) => workspace.setGraphView({ unfolded }),
  onZoom: (zoom) => { if (!player?.playing()) workspace.setGraphView({ zoom }); },
});
const memory = createMemoryChart(byTestId("memory-chart"), { onPick: (step) => player.setStep(step) });
const lifetimes = createLifetimeChart(byTestId("lifetime-chart"), { onPick: (id) => workspace.select(id) });
const inspector = createInspector(document.getElementById("inspector"), {
  manual: () => (readOnly() ? null : view.manual),
  onToggle: (id) => toggleRecompute(id, true),
});

/** The pending request's manual set marks graph nodes and labels the inspector's button. */
function setManual(checkpoint) {
  view.manual = checkpoint?.policy === "manual" ? new Set(checkpoint.recompute ?? []) : null;
  graph.setPicked(view.manual);
  if (view.index) inspector.render(ws.selected, view.index, player.getStep());
}

/** Toggle the selected node's output in the manual set; `report` says why a refused node cannot be (a button press). */
function toggleRecompute(selection, report) {
  if (readOnly() || !view.manual) return;
  const choice = recomputeChoice(selection, view.index);
  if (choice?.ok) workspace.toggleRecompute(choice.tensor);
  else if (choice && report) setStatus(`${choice.label ?? "This node"} cannot be recomputed: ${choice.reason}`, true);
}
const sweep = createSweepPanel(byTestId("sweep"));
// A run of many ranks: the selector and the chart of every rank's peak ask the workspace for another rank (setRank).
createRanksView({ field: byTestId("rank-field"), select: byTestId("rank-select"), panel: byTestId("ranks-panel"),
  chart: byTestId("ranks-chart"), note: byTestId("ranks-note") });
createModesView(byTestId("modes-view"));
createMatrixChain(byTestId("matrix-chain"));
const pareto = createParetoPanel(document.getElementById("schedules"), { onPick: pickSchedule });

/** A schedule picked on the Pareto panel: re-trace the spec with it, keeping the RNG setting. */
function pickSchedule(schedule) {
  if (readOnly()) { setStatus(offline() ? "A recorded run: its schedules are what it ran." : "A shared snapshot: make a copy to switch schedules."); return; }
  workspace.setCheckpoint(requestFor(schedule, ws.checkpoint.preserve_rng_state !== false), "now");
}

const schedules = createScheduleView({ root, pareto, current: () => ({ trace: ws.trace, checkpoint: ws.checkpoint }) });
const explainer = createPeakExplainer(byTestId("peak-explainer"), {
  onSelect: (id) => workspace.select(id),
  onGoTo: (step) => player.setStep(step),
  current: () => ({ spec: offline() ? null : ws.traced?.spec ?? ws.spec, checkpoint: wireRequest(ws.traced?.checkpoint ?? ws.checkpoint) }),
  onApply: applyLever,
});

/** A lever picked in the explainer: a checkpoint is a checkpoint choice like a schedule pick; a spec is an edit. */
function applyLever(lever) {
  if (readOnly()) { setStatus("A shared snapshot: make a copy to apply a lever."); return; }
  if (lever.checkpoint) {
    workspace.setCheckpoint(normalizeRequest({ ...lever.checkpoint, preserve_rng_state: ws.checkpoint.preserve_rng_state !== false }), "now");
  } else {
    workspace.replaceSpec(lever.spec);
  }
}

function renderStep(step) {
  if (!view.index) return;
  graph.update(step);
  memory.update(step);
  lifetimes.update(step);
  byTestId("step-label").textContent = describeStep(view.index, step);
  showBytes(byTestId("live-bytes"), ws.trace.steps[step].live_bytes);
  sweep.render(view.index, step);
  explainer.update(step);
  inspector.showStep(ws.selected, view.index, step);
  root.dataset.step = String(step);
}

let redrawing = false;   // a new trace re-placing the cursor is not a step the person took
const player = createPlayer({
  play: byTestId("play"), back: byTestId("step-back"), forward: byTestId("step-forward"),
  start: document.getElementById("step-start"), end: document.getElementById("step-end"),
  scrub: byTestId("scrub"), speed: document.getElementById("speed"), counter: byTestId("step-number"),
}, {
  onStep: (step) => { renderStep(step); workspace.setStep(step, { save: !redrawing && !player?.playing() }); },
  onStop: (step) => workspace.setStep(step),
});

function showSelection(id) {
  root.dataset.selected = id || "";
  graph.select(id, player.getStep());
  lifetimes.select(id);
  if (view.index) inspector.render(id, view.index, player.getStep());
}

/** What the run on screen is compared with: the peak delta, and the pin button's state. */
function showComparison(trace, previous, label) {
  byTestId("peak-delta").textContent = previous && previous !== trace ? describePeakDelta(previous, trace) : "";
  const pinned = Boolean(ws.baseline);
  const pinButton = byTestId("pin-baseline");
  pinButton.textContent = pinned ? "Unpin baseline" : "Pin as baseline";
  pinButton.setAttribute("aria-pressed", String(pinned));
  pinButton.disabled = !trace;
  pinButton.hidden = readOnly();                  // a snapshot is one run: nothing to compare it with
  const badge = byTestId("compare-label");
  badge.textContent = pinned ? label : previous ? "compared with the run before" : "";
  badge.classList.toggle("pinned", pinned);
}

const ghostName = () => (ws.baseline ? "baseline" : "previous run");

/** Show a trace: lay out and draw once, keep the step when it still exists, ghost what it is compared with. The graph,
 * the player and the panels come first ("interactive"); the Plotly charts on screen are drawn after the graph is
 * painted, and "ready" once they are (a chart below the screen is plotted when scrolled to: charts/on-screen.js). */
async function showTrace(trace, { keepStep, previous, label } = {}) {
  root.dataset.ready = "false";
  root.dataset.interactive = "false";
  // A re-trace keeps the cursor on the same op, not the same number (model/step-match.js); a rank switch keeps the
  // number: ranks run different ops at the same step (a pipeline's stages).
  const shown = view.index?.trace;
  if (shown && shown !== trace && !ws.run) keepStep = matchingStep(shown, keepStep, trace) ?? keepStep;
  view.index = indexTrace(trace);
  // The first trace opens where the saved session left the graph (its folds and zoom, its selected node and step
  // drawn); later ones fit.
  const savedView = view.firstTrace ? { unfolded: ws.unfolded, zoom: ws.zoom, selected: ws.selected, step: keepStep } : {};
  view.firstTrace = false;
  await graph.load(trace, view.index, savedView);
  if (ws.trace !== trace) return;                  // a newer trace arrived while this one was laid out
  setManual(ws.checkpoint);
  performance.mark("tapescope:graph-drawn");
  // The charts take this trace now (a step shown before they are drawn moves their cursor), and draw once Plotly runs.
  const charts = Promise.all([memory.load(trace, previous, ghostName()), lifetimes.load(view.index, graph.groupsView()),
    pareto.load(trace)]);
  byTestId("resident-split").textContent = residentText(trace);
  root.querySelector(".legend-collective").hidden = !trace.tape.some((entry) => entry.family === "collective");
  explainer.load(trace);
  showRunSource(root, trace, { opened: ws.openedDocument === trace });
  schedules.show(trace, ws.spec);
  showBytes(byTestId("peak-bytes"), trace.summary.peak_bytes);
  byTestId("peak-bytes").dataset.step = String(trace.summary.peak_step);
  showAllocator(byTestId("reserved-readout"), byTestId("allocator-summary"), trace);
  showComparison(trace, previous, label);
  const selected = ws.selected;
  if (selected && !graph.hasNode(selected) && !view.index.tensor(Number(selected.slice(1)))) workspace.select(null);
  redrawing = true;
  try { player.reset(view.index.lastStep, keepStep); } finally { redrawing = false; }
  const clamped = Number.isInteger(keepStep) && keepStep > view.index.lastStep;
  graph.select(ws.selected, player.getStep());
  root.dataset.selected = ws.selected || "";
  root.dataset.interactive = "true";
  performance.mark("tapescope:interactive");
  setStatus(`${trace.tape.length} tape entries · ${trace.steps.length} steps · peak ${formatBytes(trace.summary.peak_bytes)} at step ${trace.summary.peak_step}`
    + (clamped ? ` · step ${keepStep} is past this run's last step, so it shows step ${view.index.lastStep}` : "") + openingNote);
  openingNote = "";                                // said once, with the first run shown
  await charts;
  if (ws.trace !== trace) return;
  memory.update(player.getStep());
  lifetimes.update(player.getStep());
  lifetimes.select(ws.selected);
  schedules.fetchLater(trace, ws.traced?.spec ?? ws.spec, { offline: offline(trace) });   // once all is drawn
  root.dataset.ready = "true";
  performance.mark("tapescope:ready");
}

/** The Model control: the dropdown on the preset it came from, and words for what is loaded. */
function showOrigin() {
  const chooser = byTestId("preset");
  const id = workspace.presetIdFor();
  if (id) chooser.value = id;
  else chooser.selectedIndex = 0;                  // the placeholder: a copy of a model no preset names
  const origin = byTestId("model-origin");
  const words = workspace.describeOrigin();
  // An unedited preset is what the dropdown already says: nothing beside it ("Model [seed-tape] seed-tape" read twice).
  origin.textContent = id && words === chooser.selectedOptions[0]?.textContent ? "" : words;
  origin.title = origin.textContent;
}

const SAVE_WORDS = { saved: "Saved", saving: "Saving…", failed: "Not saved" };

/** The save status beside Share: saved | saving | failed, with the reason when it failed (never silent). */
function showSaveStatus({ saveState, reason, detail }) {
  const shown = saveState === "pending" || saveState === "saving" ? "saving"
    : saveState === "failed" || saveState === "conflict" ? "failed" : "saved";
  const status = byTestId("save-status");
  status.dataset.state = shown;
  status.textContent = shown === "failed" && reason ? `${SAVE_WORDS.failed}: ${reason}` : SAVE_WORDS[shown];
  status.title = detail ?? reason ?? "";              // the server's own sentence, on hover
}

function showConflict(conflict) {
  const banner = byTestId("conflict-banner");
  banner.hidden = !conflict;
}

// A chart plotted once scrolled to (views/charts/on-screen.js) that fails says so where a failed draw always has.
root.addEventListener("plot-failed", (event) => setStatus(`Could not draw: ${event.detail.message}`, true));

workspace.subscribe((kind, detail) => {
  if (kind === "trace") {
    showTrace(detail.trace, detail).catch((error) => setStatus(`Could not draw: ${error.message}`, true));
    showOrigin();
  } else if (kind === "trace-failed" && !view.index) setStatus(`Could not trace: ${detail.body?.error ?? detail.status}`, true);
  else if (kind === "tracing") setStatus("Tracing…");
  else if (kind === "checkpoint") setManual(ws.checkpoint);
  else if (kind === "select") showSelection(detail.id);
  else if (kind === "origin") showOrigin();
  else if (kind === "compare" && ws.trace) {
    showComparison(ws.trace, detail.previous, detail.label);
    memory.load(ws.trace, detail.previous, ghostName()).then(() => memory.update(player.getStep()));
  } else if (kind === "save") {
    showConflict(detail.conflict);
    root.dataset.saved = detail.saveState;
    showSaveStatus(detail);
  }
});

async function loadPresets() {
  const chooser = byTestId("preset");
  const presets = await workspace.loadPresets();
  for (const preset of presets) {
    const option = document.createElement("option");
    option.value = preset.id;
    option.textContent = preset.name;
    option.title = preset.description;
    chooser.append(option);
  }
  chooser.addEventListener("change", () => workspace.loadPreset(chooser.value));
  return presets;
}

let openingNote = "";     // what opening chose and why, said beside the first run's figures

async function start() {
  const address = readAddress();
  const sessionRequest = snapshotId ? null : workspace.savedSession();
  const [presets] = await Promise.all([loadPresets(), workspace.loadSchema()]);
  const wanted = { step: address.step, selected: address.selected, zoom: address.zoom, rank: address.rank };
  if (snapshotId) {
    document.body.classList.add("read-only");
    byTestId("preset").disabled = true;
    await workspace.openSnapshot(snapshotId, wanted);
    bindMakeCopy(byTestId("make-copy"), snapshotId, document.getElementById("share-output"));
    return;
  }
  const kept = await readOpenedRun();
  if (kept) {                                      // this tab was showing a run.json when it reloaded
    openingNote = ` · reopened ${kept.fileName || "the run.json"} this tab had open (kept in this browser); `
      + "close run goes back to your workspace and the presets";
    openDocument(kept.document, kept.fileName, { kept: true, rank: address.rank });
    return;
  }
  const session = await sessionRequest;
  const preset = presets.find((p) => p.id === address.preset);
  if (address.preset && !preset) {               // a misspelt or retired name: say so, then open as if unnamed
    openingNote = ` · this address names a model "${address.preset.slice(0, 60)}" that is not one of the presets (${presets.map((p) => p.id)
      .join(", ")}), so this is your workspace`;
  }
  const draft = readDraft();
  const workOf = (doc) => doc?.origin?.kind === "preset" ? doc.origin.preset : null;
  const ours = preset && [workOf(draft?.document), workOf(session)].includes(preset.id);
  // What opens (docs/sessions-and-snapshots.md): a snapshot link, the snapshot (above); an address naming another
  // preset than the workspace's, that preset (a new lineage); otherwise this browser's unsent draft, else the saved
  // workspace; the address's step and selection either way.
  if (preset && !ours) {                         // /?preset=…: that preset, the session's work one undo away
    workspace.adopt(session, {});
    workspace.loadPreset(preset.id, { step: address.step ?? 0, selected: address.selected ?? null, zoom: address.zoom ?? null });
    if (address.edited) openingNote = ` · this address names a model edited from ${preset.name}; the edits live in the `
      + "browser that made them, so this is the preset itself (to send a model with its edits, use Share)";
  } else if (draft && await workspace.restoreDraft(draft, session, wanted)) {
    if (!session?.spec) openingNote = " · restored your last edit from this browser (the server no longer had it); saving it again";
  } else if (session?.spec) {
    await workspace.restore(session, wanted);
  } else {
    workspace.adopt(session);
    workspace.loadPreset((presets.find((p) => p.id === "seed-tape") || presets[0]).id,
      { step: address.step ?? 0, selected: address.selected ?? null, zoom: address.zoom ?? null });
  }
}

// A row or chip that names a tensor or node (the sweep panel's chips and contributions, the per-layer table's rows)
// carries data-select: a click, or Enter on it, selects that everywhere through the workspace.
function selectFrom(event) {
  const target = event.target.closest?.("[data-select]");
  if (!target || (event.type === "keydown" && event.key !== "Enter")) return;
  workspace.select(target.dataset.select);
}
document.addEventListener("click", selectFrom);
document.addEventListener("keydown", selectFrom);

// Escape clears the selection everywhere (a field being typed in keeps its own Escape).
document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape" || !ws.selected || event.target.closest("input, textarea, select")) return;
  workspace.select(null);
});

byTestId("pin-baseline").addEventListener("click", () => (ws.baseline ? workspace.unpin() : workspace.pin()));
byTestId("conflict-keep").addEventListener("click", () => workspace.keepMine());
byTestId("conflict-reload").addEventListener("click", () => workspace.takeTheirs());

bindShare({ button: byTestId("share"), output: document.getElementById("share-output") },
  () => ({ step: player.getStep(), selected: ws.selected }));

// A read-only handle for tests and the console; no module reads it.
window.tapescope = {
  getStep: () => player.getStep(),
  setStep: (n) => player.setStep(n),
  getTrace: () => ws.trace,
  getCheckpoint: () => normalizeRequest(ws.checkpoint),
  getSelected: () => ws.selected,
  select: (id) => workspace.select(id),
  toggleRecompute: (tensor) => workspace.toggleRecompute(tensor),
  traceCount: () => ws.tracesShown,
  saveState: () => ws.saveState,
  workspace: ws,
  setJvpStep: (n) => workspace.setJvpStep(n),
  setRank: (rank) => workspace.setRank(rank),
};

/** A run.json opened here: the workspace shows it read-only; the Model control and the editor stand aside, and
 * "Close run" closes it. It is kept in this browser (opened-run.js): a reload opens it again. */
function openDocument(file, fileName, { kept = false, rank = 0 } = {}) {
  document.body.classList.add("read-only");
  document.body.dataset.readOnly = "true";
  byTestId("preset").disabled = true;
  byTestId("preset").closest("label").hidden = true;     // no preset names it: the run's source does
  byTestId("close-run").hidden = false;
  if (!kept) keepOpenedRun(file, fileName);
  workspace.loadDocument(file, fileName, { rank });
}

byTestId("close-run").addEventListener("click", async () => {
  await forgetOpenedRun();
  window.location.assign("/");                         // the workspace, as a reload before the run was opened
});

bindRunFile({ input: byTestId("open-run"), zone: byTestId("drop-zone") },
  { onDocument: (...opened) => { showOpenError(null); openDocument(...opened); }, onError: showOpenError });

// The skip link goes to the graph itself (focused, so its keys work) without touching the address's #step= hash.
byTestId("skip-to-graph")?.addEventListener("click", (event) => {
  event.preventDefault();
  byTestId("graph").focus();
});

/** A file that could not be opened is said beside the control that opened it (and in the status line). */
function showOpenError(sentence) {
  const said = byTestId("open-run-error");
  said.hidden = !sentence;
  said.textContent = sentence ?? "";
  if (sentence) setStatus(sentence, true);
}
bindShareRun({ button: byTestId("share-run"), output: document.getElementById("share-output") },
  () => ({ step: player.getStep(), selected: ws.selected, rank: ws.run ? ws.rank : null }));

if (readOnly()) document.body.dataset.readOnly = "true";
start().catch((error) => setStatus(`Could not load: ${error.message}`, true));
