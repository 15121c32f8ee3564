// explorer.js — wires the explorer page: loads a trace (preset, session or snapshot) and drives every view from one step cursor.
// Every trace it asks for carries the checkpoint request (wireRequest: none goes bare); the shown trace's schedules
// feed the Pareto panel and schedule-view.js (summary, gradient warning, ledger link, schedules fetched later).
// Under the "manual" policy a click on an op node (or the inspector's button) asks the editor to toggle its output
// in the recompute set ("tapescope:recompute-toggle"); the editor answers with "tapescope:manual-set".
import { fetchPresets, fetchSession, fetchSnapshot, traceSpec } from "./api.js";
import { describeStep } from "./describe.js";
import { formatBytes } from "./format.js";
import { createGraphView } from "./graph.js";
import { createInspector } from "./inspector.js";
import { createLifetimeChart } from "./lifetimes.js";
import { createMemoryChart } from "./memory.js";
import { createParetoPanel } from "./pareto.js";
import { createPeakExplainer } from "./peak-explainer.js";
import { describePeakDelta } from "./peak-delta.js";
import { createPlayer } from "./player.js";
import { recomputeChoice } from "./recompute-pick.js";
import { NO_CHECKPOINT, normalizeRequest, requestFor, wireRequest } from "./schedule.js";
import { createScheduleView } from "./schedule-view.js";
import { bindMakeCopy, bindShare } from "./share.js";
import { createSweepPanel } from "./sweep.js";
import { indexTrace } from "./trace-index.js";

const byTestId = (id) => document.querySelector(`[data-testid="${id}"]`);
const root = document.querySelector(".explorer");
const readOnly = root.dataset.readOnly === "true";
const snapshotId = root.dataset.snapshotId || null;

const state = { trace: null, index: null, spec: null, selected: null, checkpoint: { ...NO_CHECKPOINT }, manual: null };
const statusLine = document.getElementById("status");

function setStatus(text, isError = false) {
  statusLine.textContent = text;
  statusLine.classList.toggle("error", isError);
}

function showBytes(element, bytes) {
  element.dataset.bytes = String(bytes);
  element.textContent = formatBytes(bytes);
  element.title = `${bytes.toLocaleString("en")} bytes`;
}

const graph = createGraphView(byTestId("graph"), { onSelect: (id) => { select(id); if (id?.[0] === "e") toggleRecompute(id, false); } });
const memory = createMemoryChart(byTestId("memory-chart"), { onPick: (step) => player.setStep(step) });
const lifetimes = createLifetimeChart(byTestId("lifetime-chart"), { onPick: (id) => select(id) });
const inspector = createInspector(document.getElementById("inspector"), {
  manual: () => (readOnly ? null : state.manual),
  onToggle: (id) => toggleRecompute(id, true),
});

/** The editor's pending request: its manual set marks graph nodes and labels the inspector's button. */
function setManual(checkpoint) {
  state.manual = checkpoint?.policy === "manual" ? new Set(checkpoint.recompute ?? []) : null;
  graph.setPicked(state.manual);
  if (state.index) inspector.render(state.selected, state.index, player.getStep());
}

/** Toggle the selected node's output in the manual set; `report` says why a refused node cannot be (a button press). */
function toggleRecompute(selection, report) {
  if (readOnly || !state.manual) return;
  const choice = recomputeChoice(selection, state.index);
  if (choice?.ok) document.dispatchEvent(new CustomEvent("tapescope:recompute-toggle", { detail: { tensor: choice.tensor } }));
  else if (choice && report) setStatus(`${choice.label ?? "This node"} cannot be recomputed: ${choice.reason}`, true);
}
const sweep = createSweepPanel(byTestId("sweep"));
const pareto = createParetoPanel(document.getElementById("schedules"), { onPick: pickSchedule });

/** A schedule picked on the Pareto panel: the editor re-traces the spec with it, keeping the RNG setting. */
function pickSchedule(schedule) {
  if (readOnly) { setStatus("A shared snapshot: make a copy to switch schedules."); return; }
  const checkpoint = requestFor(schedule, state.checkpoint.preserve_rng_state !== false);
  document.dispatchEvent(new CustomEvent("tapescope:checkpoint", { detail: { checkpoint } }));
}

const schedules = createScheduleView({ root, pareto, current: () => state });
const explainer = createPeakExplainer(byTestId("peak-explainer"), {
  onSelect: (id) => select(id),
  onGoTo: (step) => player.setStep(step),
  current: () => ({ spec: state.spec, checkpoint: wireRequest(state.checkpoint) }),
  onApply: applyLever,
});

/** A lever picked in the explainer: a checkpoint goes to the editor like a schedule pick; a spec is an edit. */
function applyLever(lever) {
  if (readOnly) { setStatus("A shared snapshot: make a copy to apply a lever."); return; }
  if (lever.checkpoint) {
    const checkpoint = normalizeRequest({ ...lever.checkpoint, preserve_rng_state: state.checkpoint.preserve_rng_state !== false });
    document.dispatchEvent(new CustomEvent("tapescope:checkpoint", { detail: { checkpoint } }));
  } else {
    traceAndShow(lever.spec, "lever");
  }
}

function renderStep(step) {
  if (!state.index) return;
  graph.update(step);
  memory.update(step);
  lifetimes.update(step);
  byTestId("step-label").textContent = describeStep(state.index, step);
  showBytes(byTestId("live-bytes"), state.trace.steps[step].live_bytes);
  sweep.render(state.index, step);
  explainer.update(step);
  inspector.render(state.selected, state.index, step);
  root.dataset.step = String(step);
}

const player = createPlayer({
  play: byTestId("play"), back: byTestId("step-back"), forward: byTestId("step-forward"),
  start: document.getElementById("step-start"), end: document.getElementById("step-end"),
  scrub: byTestId("scrub"), speed: document.getElementById("speed"),
}, { onStep: renderStep });

function select(id) {
  state.selected = id;
  root.dataset.selected = id || "";
  graph.select(id, player.getStep());
  inspector.render(id, state.index, player.getStep());
}

/** Show a trace: lay out and draw once, keep the step when it still exists, ghost the previous run. */
async function showTrace(trace, spec, { keepStep, previous, checkpoint } = {}) {
  root.dataset.ready = "false";
  state.trace = trace;
  state.index = indexTrace(trace);
  state.spec = spec;
  if (trace.schedule) state.checkpoint = requestFor(trace.schedule);
  else if (checkpoint) state.checkpoint = normalizeRequest(checkpoint);
  await graph.load(trace, state.index);
  setManual(state.checkpoint);
  performance.mark("tapescope:graph-drawn");
  await Promise.all([memory.load(trace, previous), lifetimes.load(state.index), pareto.load(trace)]);
  explainer.load(trace);
  schedules.show(trace, spec);
  schedules.fetchLater(trace, spec);
  showBytes(byTestId("peak-bytes"), trace.summary.peak_bytes);
  byTestId("peak-bytes").dataset.step = String(trace.summary.peak_step);
  byTestId("peak-delta").textContent = previous ? describePeakDelta(previous, trace) : "";
  if (state.selected && !graph.hasNode(state.selected) && !state.index.tensor(Number(state.selected.slice(1)))) state.selected = null;
  player.reset(state.index.lastStep, keepStep);
  graph.select(state.selected, player.getStep());
  root.dataset.ready = "true";
  performance.mark("tapescope:ready");
  setStatus(`${trace.tape.length} tape entries · ${trace.steps.length} steps · peak ${formatBytes(trace.summary.peak_bytes)} at step ${trace.summary.peak_step}`);
}

const checkpointProblem = (error) => error.status === 400 && error.problems.some((p) => String(p.path).startsWith("checkpoint"));

/** Trace a spec with the current checkpoint; a request this model cannot take (k > L) falls back to none. */
async function traceWithCheckpoint(spec, signal) {
  try {
    return await traceSpec(spec, signal, wireRequest(state.checkpoint));
  } catch (error) {
    if (!checkpointProblem(error)) throw error;
    setStatus(`This model cannot take that checkpoint request (${error.problems[0].message}): tracing without checkpointing.`);
    state.checkpoint = { ...NO_CHECKPOINT, preserve_rng_state: state.checkpoint.preserve_rng_state !== false };
    return traceSpec(spec, signal, wireRequest(state.checkpoint));
  }
}

let inFlight = null;
async function traceAndShow(spec, source) {
  if (inFlight) inFlight.abort();
  inFlight = new AbortController();
  // Another model: the manual set's tensor ids would name other tensors, or none.
  if (source === "preset" && state.checkpoint.recompute?.length) state.checkpoint = { ...state.checkpoint, recompute: [] };
  setStatus("Tracing…");
  try {
    const trace = await traceWithCheckpoint(spec, inFlight.signal);
    await showTrace(trace, spec, { keepStep: player.getStep(), previous: state.trace });
    document.dispatchEvent(new CustomEvent("tapescope:spec", { detail: { spec, source, checkpoint: state.checkpoint } }));
  } catch (error) {
    if (error.name !== "AbortError") setStatus(`Could not trace: ${error.message}`, true);
  }
}

async function loadPresets() {
  const chooser = byTestId("preset");
  const presets = await fetchPresets();
  for (const preset of presets) {
    const option = document.createElement("option");
    option.value = preset.id;
    option.textContent = preset.name;
    option.title = preset.description;
    chooser.append(option);
  }
  chooser.addEventListener("change", () => {
    const preset = presets.find((p) => p.id === chooser.value);
    if (preset) traceAndShow(preset.spec, "preset");
  });
  return presets;
}

async function start() {
  const sessionRequest = snapshotId ? null : fetchSession().catch(() => null);
  const presets = await loadPresets();
  if (snapshotId) {
    document.body.classList.add("read-only");
    byTestId("preset").disabled = true;
    const snapshot = await fetchSnapshot(snapshotId);
    state.selected = snapshot.view.selected || null;
    if (snapshot.checkpoint) state.checkpoint = normalizeRequest(snapshot.checkpoint);
    await showTrace(snapshot.trace, snapshot.spec, { keepStep: snapshot.view.step });
    document.dispatchEvent(new CustomEvent("tapescope:spec", { detail: { spec: snapshot.spec, source: "snapshot", readOnly: true, checkpoint: state.checkpoint } }));
    bindMakeCopy(byTestId("make-copy"), snapshotId, document.getElementById("share-output"));
    return;
  }
  const session = await sessionRequest;
  if (session && session.spec) {
    state.selected = session.view?.selected || null;
    if (session.checkpoint) state.checkpoint = normalizeRequest(session.checkpoint);
    const trace = await traceWithCheckpoint(session.spec).catch((error) => { setStatus(`Could not trace the saved spec: ${error.message}`, true); return null; });
    if (trace) {
      await showTrace(trace, session.spec, { keepStep: session.view?.step ?? 0 });
      document.dispatchEvent(new CustomEvent("tapescope:spec", { detail: { spec: session.spec, source: "session", checkpoint: state.checkpoint } }));
      return;
    }
  }
  const first = presets.find((p) => p.id === "seed-tape") || presets[0];
  byTestId("preset").value = first.id;
  await traceAndShow(first.spec, "preset");
}

document.addEventListener("tapescope:manual-set", (event) => setManual(event.detail?.checkpoint));

document.addEventListener("tapescope:trace", (event) => {
  const { trace, spec, checkpoint } = event.detail;
  showTrace(trace, spec, { keepStep: player.getStep(), previous: state.trace, checkpoint });
});

bindShare({ button: byTestId("share"), output: document.getElementById("share-output") },
  () => ({ spec: state.spec, checkpoint: normalizeRequest(state.checkpoint), step: player.getStep(), selected: state.selected }));

window.tapescope = {
  getStep: () => player.getStep(),
  setStep: (n) => player.setStep(n),
  getTrace: () => state.trace,
  getCheckpoint: () => normalizeRequest(state.checkpoint),
  getSelected: () => state.selected,
  select,
};

if (readOnly) document.body.dataset.readOnly = "true";
start().catch((error) => setStatus(`Could not load: ${error.message}`, true));
