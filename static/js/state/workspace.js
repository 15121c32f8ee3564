// workspace.js — the one holder of the page's state: the spec being edited and its checkpoint request, where the model
// came from (origin), the trace on screen, the step, the selection, the pinned baseline and the undo/redo history.
// It alone talks to the API (api.js): traces (one request in flight: a newer one aborts the older, schedules included),
// presets, the schema, the session, snapshots, levers and modes; the matrix-chain lesson, whose widths are no part of
// the workspace, is the one view with a request of its own (views/panels/matrix-chain.js). It autosaves settled
// changes to PUT /api/session (autosave.js); the address follows the step (address.js).
// Views call its methods and subscribe to what changed:
//   "spec"        the draft was replaced wholesale (undo, redo, a preset, a restore): redraw the form
//   "checkpoint"  the checkpoint request changed (a policy, the manual set)
//   "tracing"     a trace request started       "trace-failed"  it was refused ({status, body})
//   "cap-met"     a request was refused over a size cap ({asked, settled, failure}), on screen or superseded
//   "trace"       a trace is shown ({trace, previous, label, keepStep}; previous is what it is compared with)
//   "compare"     the comparison changed without a new trace (pin, unpin)
//   "select", "history", "origin", "save" (saveState, conflict)
//   "modes"       the forward-vs-reverse report changed ({report} on screen, {running}, or {failure})
//   "jvp-step"    the JVP sweep's cursor moved ({step})
//   "rank"        a run of many ranks: which rank's document is on screen changed ({rank}; a "trace" came first)
// A run.json opened from a file (loadDocument) enters here too, read-only: shown as it is, never saved or sent. A run
// of many ranks ({world_size, ranks: [document, ...]}, opened or shared) shows one rank's document at a time as the
// trace: setRank() puts another rank's on screen, so every view follows it as it follows any new trace.
import { writeAddress } from "./address.js";
import { copySnapshot as copySnapshotOf, createSnapshot, fetchLevers, fetchModes, fetchPresets, fetchSchema, fetchSession,
  fetchSnapshot, postTrace, traceSpec } from "./api.js";
import { createAutosave } from "./autosave.js";
import { clone, same } from "../model/spec.js";
import { NO_CHECKPOINT, normalizeRequest, requestFor, wireRequest } from "../model/schedule.js";
import { readTrace } from "./trace-document.js";

export const HISTORY_LIMIT = 50;                 // the server's history_entries cap (tests/models/test_caps.py)
const TRACE_DELAY_MS = 150;       // typing pauses and slider throttling
const KEY_BURST_PAUSE_MS = 700;   // a pause this long ends a burst of arrow presses (key repeat is ~30 ms apart)

const listeners = new Set();
const emit = (kind, detail = {}) => { for (const listener of listeners) listener(kind, detail); };

export const state = {
  spec: null,                                 // the draft: what the editor shows (may not have traced)
  checkpoint: { ...NO_CHECKPOINT, k: 2 },     // the form's request: k and budget are remembered across policies
  origin: null,                               // {kind: "preset", preset} | {kind: "copy" | "snapshot" | "file", title}
  presets: [],
  schema: null,                               // GET /api/schema: every spec field's range, default, options and help
  trace: null,                                // the trace on screen, and the request that made it
  traced: null,
  previous: null,                             // the last settled trace of this lineage before the one on screen
  step: 0, selected: null, zoom: null,       // zoom: the graph's {k, x, y}
  unfolded: null,                             // the graph's open groups: null (its opening level), "all", or [group ids]
  baseline: null,                             // {spec, checkpoint, origin, label, trace}
  history: { undo: [], redo: [] },
  committed: null,                            // the settled entry {spec, checkpoint, origin} the history sits on
  readOnly: false,
  openedDocument: null,                       // a run.json opened from a file, decoded (the trace it shows)
  openedFile: null,                           // ... and as it came: what "Share this run" posts
  run: null,                                  // a run of many ranks, as it came ({world_size, ranks}); null for one
  rank: 0,                                    // ... the rank whose document is the trace on screen
  version: null, saveState: "idle", conflict: null,
  settledTrace: null,                         // the last trace that settled (no drag, nothing pending)
  settledAsked: null,                         // what it was traced for
  tracesShown: 0,
  modes: { report: null, spec: null, element: 0, jvpStep: 0 },   // the forward-vs-reverse report, for `spec`
};

export function subscribe(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

// ------------------------------ what a run is called ------------------------------

const presetById = (id) => state.presets.find((p) => p.id === id);

/** The lineage a run belongs to: comparisons never cross one (another preset, a copy). */
const lineage = (origin) => (origin ? `${origin.kind}:${origin.preset ?? origin.title ?? ""}` : "");

/** The Model control's words: the preset's name, "edited from <preset>", "copy of <title>", "snapshot: <title>". */
export function describeOrigin(origin = state.origin, spec = state.spec) {
  if (!origin) return "";
  if (origin.kind === "preset") {
    const preset = presetById(origin.preset);
    const name = preset?.name ?? origin.preset;
    return preset && same(preset.spec, spec) ? name : `edited from ${name}`;
  }
  if (origin.kind === "copy") return `copy of ${origin.title}`;
  if (origin.kind === "file") return `opened: ${origin.title}`;
  return `snapshot: ${origin.title}`;
}

/** "sqrt, batch 64": what a pinned run was. */
export function describeRun(spec, checkpoint) {
  const policy = normalizeRequest(checkpoint).policy;
  const parts = [policy === "none" ? "no checkpointing" : policy];
  if (spec?.batch !== undefined) parts.push(`batch ${spec.batch}`);
  return parts.join(", ");
}

/** The preset the dropdown should show for a spec: its origin's preset, else one whose name it carries. */
export function presetIdFor(origin = state.origin, spec = state.spec) {
  if (origin?.kind === "preset" && presetById(origin.preset)) return origin.preset;
  return presetById(spec?.name)?.id ?? "";
}

const entry = () => ({ spec: clone(state.spec), checkpoint: normalizeRequest(state.checkpoint), origin: state.origin });

/** What the address names of the model: its preset and whether it was edited from it (null for anything else). */
/** The address follows the step, selection, model and zoom (address.js). */
function showInAddress() {
  writeAddress(state.step, state.selected, modelInAddress(), state.zoom, state.run ? state.rank : null);
}

function modelInAddress() {
  if (state.readOnly || state.origin?.kind !== "preset" || !presetById(state.origin.preset)) return null;
  return { preset: state.origin.preset, edited: describeOrigin().startsWith("edited") };
}
const sameEntry = (a, b) => Boolean(a && b) && same(a.spec, b.spec) && same(a.checkpoint, b.checkpoint) && lineage(a.origin) === lineage(b.origin);

// ------------------------------ the one trace request ------------------------------

let timer = null;
let pending = null;
let controller = null;
let generation = 0;
let lastFire = -Infinity;
let pointerDown = false;
let keyBurst = null;      // while a burst of arrow presses on a number or a slider (a drag by keyboard) goes on: the
                          // timer ending it, or AWAITING_ANSWER
const holding = () => pointerDown || keyBurst !== null;
let answered = null;      // the request whose answer (a trace or a refusal) came last: only its trace may settle

const checkpointProblem = (error) => error.status === 400 && (error.problems ?? []).some((p) => String(p.path).startsWith("checkpoint"));

function request(mode = "debounce", { newLineage = false, fallback = false, keepStep = true } = {}) {
  pending = { ...entry(), newLineage, fallback, keepStep };
  generation++;
  emit("tracing");
  if (mode === "now") {
    clearTimeout(timer);
    timer = null;
    fire();
  } else if (mode === "throttle") {
    if (!timer) timer = setTimeout(fire, Math.max(0, lastFire + TRACE_DELAY_MS - performance.now()));
  } else {
    clearTimeout(timer);
    timer = setTimeout(fire, TRACE_DELAY_MS);
  }
}

async function fire() {
  timer = null;
  const asked = pending;
  pending = null;
  lastFire = performance.now();
  controller?.abort();
  const mine = (controller = new AbortController());
  const id = generation;
  const started = performance.now();
  let trace = null;
  let failure = null;
  try {
    trace = await traceSpec(asked.spec, mine.signal, wireRequest(asked.checkpoint));
  } catch (error) {
    if (error.name === "AbortError") return;
    if (asked.fallback && checkpointProblem(error)) {   // a model that cannot take this request (k > L): trace without
      asked.checkpoint = { ...NO_CHECKPOINT, preserve_rng_state: asked.checkpoint.preserve_rng_state !== false };
      try { trace = await traceSpec(asked.spec, mine.signal, wireRequest(asked.checkpoint)); } catch (again) { error = again; }
      if (trace) { state.checkpoint = { ...state.checkpoint, ...asked.checkpoint }; emit("checkpoint"); }
    }
    if (!trace) {
      if (error.name === "AbortError") return;
      failure = error.status
        ? { status: error.status, body: { ...error.body, problems: error.problems } }
        : { status: 0, body: { error: `could not reach the server: ${error.message}` } };
    }
  }
  if (controller === mine) controller = null;
  // Where a size cap lies is worth knowing even when a newer request owns the screen (a drag goes on past it).
  if (failure?.status === 413) emit("cap-met", { asked: asked.spec, settled: state.settledAsked?.spec ?? state.traced?.spec, failure });
  if (id !== generation || pending) return;          // a newer request owns the screen
  answered = asked;
  if (keyBurst !== null) pauseBurst();               // a burst's pause counts from what its last press showed
  if (failure) { refused(failure, performance.now() - started); return; }
  show(trace, asked, performance.now() - started);
}

const busy = () => Boolean(timer || controller || pending);        // any request out, the schedules' included
const tracing = () => Boolean(timer || pending || (controller && !controller.forSchedules));   // a trace of the spec

/** The latest request was refused (over a cap, a bad field): the error is said, and a trace drawn on the way there
 * (a slider passing width 1 mid-drag) gives way to the last settled one, which stays "before": an over-cap value
 * never replaces it. */
function refused(failure, ms) {
  if (state.settledTrace && state.trace !== state.settledTrace) {
    state.trace = state.settledTrace;
    state.traced = state.settledAsked;
    state.previous = null;
    emit("trace", { trace: state.trace, ms: 0, keepStep: state.step, ...comparison() });
  }
  emit("trace-failed", { ...failure, ms });          // after the redraw, so the marked fields stay marked
  emit("history");
}

/** A trace arrived for `asked`: it goes on screen compared with the baseline, or the last settled run of its lineage. */
function show(trace, asked, ms = 0) {
  const crossed = asked.newLineage || lineage(asked.origin) !== lineage(state.traced?.origin);
  if (crossed) {
    state.previous = null;
    state.settledTrace = null;
    if (state.baseline && (asked.newLineage || lineage(state.baseline.origin) !== lineage(asked.origin))) state.baseline = null;
  } else {
    state.previous = state.settledTrace ?? null;
  }
  state.trace = trace;
  state.traced = asked;
  if (trace.schedule) state.checkpoint = { ...state.checkpoint, ...requestFor(trace.schedule) };
  state.tracesShown++;
  if (!holding()) settle();
  const keepStep = asked.keepStep === true ? state.step : asked.keepStep === false ? 0 : asked.keepStep;
  emit("trace", { trace, ms, keepStep, ...comparison() });
  emit("history");
  emit("origin");
}

/** What the trace on screen is compared with: the pinned baseline, else the last settled run of this lineage. */
export function comparison() {
  if (state.baseline?.trace) return { previous: state.baseline.trace, label: `baseline: ${state.baseline.label}` };
  return { previous: state.previous, label: state.previous ? "before" : "" };
}

/** The run on screen is settled (no drag, nothing pending): it becomes "before" and a history entry, and is saved. */
function settle() {
  if (tracing() || holding() || !state.trace || state.settledTrace === state.trace || state.traced !== answered) return;
  state.settledTrace = state.trace;
  state.settledAsked = state.traced;
  const now = { spec: clone(state.traced.spec), checkpoint: state.traced.checkpoint, origin: state.traced.origin };
  if (state.readOnly || sameEntry(now, state.committed)) return;
  const first = !state.committed;             // the page's opening run is not a change: nothing to save yet
  if (!first) state.history.undo = [...state.history.undo, state.committed].slice(-HISTORY_LIMIT);
  if (!first) state.history.redo = [];
  state.committed = now;
  if (!first) scheduleSave();
}

document.addEventListener("pointerdown", () => { pointerDown = true; }, true);
document.addEventListener("pointerup", () => { pointerDown = false; setTimeout(settle, 0); }, true);
document.addEventListener("pointercancel", () => { pointerDown = false; setTimeout(settle, 0); }, true);
// Arrow presses on a number or a slider are a drag by keyboard: until they pause, what they pass through is not
// "before" — the delta compares where the burst started with where it ends.
const STEPPING_KEYS = new Set(["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "PageUp", "PageDown", "Home", "End"]);
const stepsByKey = (event) => STEPPING_KEYS.has(event.key) && event.target instanceof HTMLInputElement
  && (event.target.type === "number" || event.target.type === "range");
document.addEventListener("keydown", (event) => {
  if (!stepsByKey(event)) return;
  pauseBurst();
}, true);

/** A burst ends after KEY_BURST_PAUSE_MS with no press and no answer: a press made after a slow trace's answer (the
 * person waited to see it) still belongs to the burst, and a pause while a trace is out waits for its answer. */
const AWAITING_ANSWER = -1;
function pauseBurst() {
  clearTimeout(keyBurst);
  keyBurst = setTimeout(() => {
    if (tracing()) { keyBurst = AWAITING_ANSWER; return; }
    keyBurst = null;
    settle();
  }, KEY_BURST_PAUSE_MS);
}

// ------------------------------ changes ------------------------------

/** A spec edit from the form or the JSON; `mode` is "debounce" (typing), "throttle" (a slider) or "now". */
export function edit(spec, mode = "debounce") {
  if (state.readOnly) return;
  state.spec = clone(spec);
  if (state.checkpoint.recompute?.length) {        // a spec edit may renumber the tensors: the manual set starts over
    state.checkpoint = { ...state.checkpoint, recompute: [] };
    emit("checkpoint");
  }
  request(mode);
  emit("history");
  emit("origin");
}

/** A spec from elsewhere (a lever): the form is redrawn from it, then it is traced as an edit. */
export function replaceSpec(spec) {
  edit(spec, "now");
  emit("spec");
}

/** A whole checkpoint request (the editor's controls fill in k and budget defaults; a picked schedule is whole). */
export function setCheckpoint(checkpoint, mode = "now") {
  if (state.readOnly || !state.spec) return;
  state.checkpoint = { ...state.checkpoint, ...checkpoint };
  if (!Array.isArray(state.checkpoint.recompute)) state.checkpoint.recompute = [];
  emit("checkpoint");
  request(mode);
  emit("history");
}

/** Under the manual policy, add or remove one tensor from the recompute set. */
export function toggleRecompute(tensor) {
  if (state.readOnly || state.checkpoint.policy !== "manual" || !Number.isInteger(tensor)) return;
  const ids = state.checkpoint.recompute ?? [];
  setCheckpoint({ recompute: ids.includes(tensor) ? ids.filter((t) => t !== tensor) : [...ids, tensor] }, "debounce");
}

/** Another preset: a new lineage (step 0, nothing to compare with, the baseline cleared); the old one stays undoable. */
export function loadPreset(presetId, { step = 0, selected = null, zoom = null } = {}) {
  const preset = presetById(presetId);
  if (!preset || state.readOnly) return;
  state.spec = clone(preset.spec);
  state.origin = { kind: "preset", preset: preset.id };
  state.checkpoint = { ...state.checkpoint, recompute: [] };
  state.baseline = null;
  state.step = step;
  state.selected = selected;
  state.zoom = zoom;
  state.unfolded = null;
  emit("spec");
  emit("checkpoint");
  request("now", { newLineage: true, fallback: true, keepStep: step });
}

function goTo(target) {
  state.spec = clone(target.spec);
  state.checkpoint = { ...state.checkpoint, ...normalizeRequest(target.checkpoint) };
  state.origin = target.origin ?? state.origin;
  state.committed = { spec: clone(target.spec), checkpoint: normalizeRequest(target.checkpoint), origin: state.origin };
  emit("spec");
  emit("checkpoint");
  request("now", { fallback: true });
  emit("history");
  scheduleSave();                               // the history moved: saved even though the entry is not new
}

export const canUndo = () => !state.readOnly && (state.history.undo.length > 0 || Boolean(state.committed && !sameEntry(entry(), state.committed)));
export const canRedo = () => !state.readOnly && state.history.redo.length > 0;

export function undo() {
  if (!canUndo()) return;
  if (state.committed && !sameEntry(entry(), state.committed)) { goTo(state.committed); return; }   // an unsettled edit
  state.history.redo = [...state.history.redo, state.committed].slice(-HISTORY_LIMIT);
  const target = state.history.undo.at(-1);
  state.history.undo = state.history.undo.slice(0, -1);
  goTo(target);
}

export function redo() {
  if (!canRedo()) return;
  state.history.undo = [...state.history.undo, state.committed].filter(Boolean).slice(-HISTORY_LIMIT);
  const target = state.history.redo.at(-1);
  state.history.redo = state.history.redo.slice(0, -1);
  goTo(target);
}

/** The step cursor moved; `save: false` while playing (the step is saved once the player stops) or redrawing. */
export function setStep(step, { save = true } = {}) {
  state.step = step;
  showInAddress();
  if (save) scheduleSave();
}

/** Where the graph's view is (zoom {k, x, y}, its unfolded groups): saved with the session, opened on a reload. */
export function setGraphView({ zoom, unfolded }) {
  const before = JSON.stringify([state.zoom, state.unfolded]);
  if (zoom !== undefined) state.zoom = zoom;
  if (unfolded !== undefined) state.unfolded = unfolded;
  if (zoom !== undefined) showInAddress();
  if (!state.readOnly && JSON.stringify([state.zoom, state.unfolded]) !== before) scheduleSave();
}

export function select(id) {
  state.selected = id || null;
  showInAddress();
  emit("select", { id: state.selected });
  scheduleSave();
}

/** Freeze the run on screen: until unpinned, every comparison is against it. */
export function pin() {
  if (!state.trace || !state.traced) return;
  state.baseline = { spec: clone(state.traced.spec), checkpoint: state.traced.checkpoint, origin: state.traced.origin,
    label: describeRun(state.traced.spec, state.traced.checkpoint), trace: state.trace };
  emit("compare", comparison());
  scheduleSave();
}

export function unpin() {
  state.baseline = null;
  emit("compare", comparison());
  scheduleSave();
}

// ------------------------------ schedules (the same one request) ------------------------------

/** The schedules of a trace traced without them: aborted by any other trace request; null while one is under way. */
export async function traceSchedules(spec, checkpoint) {
  if (busy()) return null;
  const mine = (controller = new AbortController());
  mine.forSchedules = true;          // the run on screen may settle meanwhile: this request does not change it
  try {
    return await traceSpec(spec, mine.signal, checkpoint);
  } finally {
    if (controller === mine) controller = null;
  }
}

// ------------------------------ forward vs reverse (POST /api/modes) ------------------------------

let modesController = null;

/** Whether the report on screen is for the model traced now (and the direction asked for). */
export const modesCurrent = (element = state.modes.element) =>
  Boolean(state.modes.report && state.traced && same(state.modes.spec, state.traced.spec) && state.modes.element === element);

/** Run both modes on the traced model, following input element `element` in the stepped JVP sweep. */
export async function requestModes(element = state.modes.element) {
  const spec = state.traced?.spec;
  if (!spec || modesCurrent(element)) return;
  modesController?.abort();
  const mine = (modesController = new AbortController());
  state.modes = { ...state.modes, element };
  emit("modes", { running: true });
  try {
    const report = await fetchModes(spec, element, mine.signal);
    state.modes = { report, spec: clone(spec), element, jvpStep: 0 };
    emit("modes", { report });
    emit("jvp-step", { step: 0 });
  } catch (error) {
    if (error.name === "AbortError") return;
    state.modes = { ...state.modes, report: null, spec: null };
    emit("modes", { failure: { status: error.status ?? 0, body: error.body ?? { error: error.message } } });
  } finally {
    if (modesController === mine) modesController = null;
  }
}

/** The JVP sweep's cursor: the panel shows that op's value and tangent, and the graph selects its tape entry. */
export function setJvpStep(step) {
  const steps = state.modes.report?.jvp_sweep.steps ?? [];
  if (!steps.length) return;
  state.modes.jvpStep = Math.max(0, Math.min(steps.length - 1, step));
  emit("jvp-step", { step: state.modes.jvpStep });
  const entry = steps[state.modes.jvpStep].entry;
  if (entry !== null && state.trace?.tape[entry]?.op === steps[state.modes.jvpStep].op) select(`e${entry}`);
}

// ------------------------------ levers and links: requests about the run on screen ------------------------------

/** POST /api/levers: every change that could lower the peak of `spec` under `checkpoint`, executed by the engine and
 * ranked. The report is the peak explainer's to keep (per model), not the workspace's state. */
export const requestLevers = (spec, checkpoint, signal) => fetchLevers(spec, checkpoint, signal);

/** Share: a snapshot of the model on screen (as traced) and its checkpoint, opening at `view`'s step and selection;
 * resolves to {id, url}. */
export const shareSnapshot = ({ step, selected }) =>
  createSnapshot(state.traced?.spec ?? state.spec, { step, selected: selected || null }, normalizeRequest(state.checkpoint) || null);

/** "Share this run": the run.json opened here, posted as it came (the server checks it before storing it). */
export const shareOpenedRun = () => postTrace(state.openedFile);

/** "Make a copy" of the snapshot `id`: the copy becomes this browser's session (the page then opens it). */
export const copySnapshot = (id) => copySnapshotOf(id);

// ------------------------------ opening: a session, a preset, a snapshot ------------------------------

/** The presets (GET /api/presets), kept for naming runs and returned for the Model control. */
export async function loadPresets() {
  state.presets = await fetchPresets();
  return state.presets;
}
/** The workspace this browser saved (GET /api/session), or null when there is none or it cannot be read. */
export const savedSession = () => fetchSession().catch(() => null);
/** The spec's field schema, fetched once at start (before any spec opens): the editor draws its controls from it. */
export async function loadSchema() { state.schema = await fetchSchema(); }

/** Take a saved workspace document (GET /api/session's answer) as the state, without tracing it yet. */
export function adopt(document, view = {}) {
  state.version = document?.version ?? null;
  if (!document?.spec) return;
  state.history = { undo: document.history?.undo ?? [], redo: document.history?.redo ?? [] };
  state.spec = clone(document.spec);
  state.origin = document.origin ?? (presetById(document.spec?.name) ? { kind: "preset", preset: document.spec.name } : { kind: "copy", title: document.spec?.name ?? "a saved model" });
  if (document.checkpoint) state.checkpoint = { ...state.checkpoint, ...normalizeRequest(document.checkpoint) };
  state.committed = entry();
  state.step = view.step ?? document.view?.step ?? 0;
  state.selected = view.selected !== undefined ? view.selected : document.view?.selected ?? null;
  state.zoom = view.zoom ?? document.view?.zoom ?? null;
  state.unfolded = document.view?.unfolded ?? null;
}

/** Open a saved workspace document where it was; `view` (the address's step, selection, zoom) overrides its own. */
export async function restore(document, view = {}) {
  adopt(document, view);
  emit("spec");
  emit("checkpoint");
  const baseline = document.baseline;
  const shown = nextShown();
  request("now", { newLineage: true, fallback: true, keepStep: state.step });
  await shown;
  if (!baseline?.spec || lineage(baseline.origin) !== lineage(state.origin)) return;
  try {
    const trace = await traceSpec(baseline.spec, undefined, wireRequest(normalizeRequest(baseline.checkpoint)));
    state.baseline = { ...baseline, trace };
    emit("compare", comparison());
  } catch { /* a baseline that no longer traces is simply not pinned */ }
}

/** Open this browser's unsent draft (draft.js) when it holds what the server's workspace does not: its save names
 * the version it started from, so it lands when the server still has that version, creates the workspace when there
 * is none (never made, or evicted), and meets the conflict banner when another tab saved since. False when the
 * server already holds the draft (nothing to open from it). */
export async function restoreDraft(draft, session, view = {}) {
  const kept = draft.document;
  if (session?.spec && ["spec", "checkpoint", "view", "history"].every((field) => same(kept[field], session[field]))) return false;
  await restore({ ...kept, version: session?.version ? kept.version ?? null : null }, view);
  scheduleSave();
  return true;
}

/** Resolves when the next trace is on screen (or refused). */
function nextShown() {
  return new Promise((resolve) => {
    const stop = subscribe((kind) => { if (kind === "trace" || kind === "trace-failed") { stop(); resolve(kind); } });
  });
}

/** A read-only snapshot (GET /api/snapshots/<id>): its stored trace, shown as it is; nothing is saved. */
export async function openSnapshot(id, view = {}) {
  const snapshot = await fetchSnapshot(id);
  state.readOnly = true;
  state.spec = clone(snapshot.spec);
  state.origin = { kind: "snapshot", title: snapshot.title || snapshot.spec?.name || "shared model" };
  if (snapshot.checkpoint) state.checkpoint = { ...state.checkpoint, ...normalizeRequest(snapshot.checkpoint) };
  state.step = view.step ?? snapshot.view.step;
  state.zoom = view.zoom ?? null;
  state.selected = view.selected !== undefined ? view.selected : snapshot.view.selected || null;
  const trace = openRun(snapshot.trace, view.rank, (decoded) => decoded);   // fetchSnapshot read one document
  emit("spec");
  emit("checkpoint");
  show(trace, { ...entry(), keepStep: state.step, newLineage: true });
  if (state.run) emit("rank", { rank: state.rank });
}

// ------------------------------ a run of many ranks ------------------------------

let rankTraces = [];      // the run's documents, decoded when first shown

/** True when `document` is a run of many ranks ({world_size, ranks}), not one trace document. */
export const isManyRanks = (document) => Boolean(document) && Array.isArray(document.ranks) && document.schema_version === undefined;

/** The run's rank `rank`'s document, decoded (once). */
export function rankTrace(rank) {
  if (!state.run) return null;
  rankTraces[rank] ??= readTrace(state.run.ranks[rank]);
  return rankTraces[rank];
}

/** `document` as opened: a run of many ranks becomes state.run and its `rank`'s document (rank 0 when the rank is
 * not one of the run's) is returned; one document is returned as `decode` reads it (a snapshot's came decoded). */
function openRun(document, rank = 0, decode = readTrace) {
  if (!isManyRanks(document)) {
    state.run = null;
    return decode(document);
  }
  state.run = document;
  rankTraces = [];
  state.rank = Number.isInteger(rank) && rank >= 0 && rank < document.ranks.length ? rank : 0;
  return rankTrace(state.rank);
}

/** Put rank `rank`'s document on screen: every view redraws from it as from any trace shown, at the same step
 * (clamped to its last) and with the same selection when it has that node. */
export function setRank(rank) {
  if (!state.run || !Number.isInteger(rank) || rank < 0 || rank >= state.run.ranks.length || rank === state.rank) return;
  state.rank = rank;
  const trace = rankTrace(rank);
  if (state.openedDocument) state.openedDocument = trace;
  show(trace, { ...entry(), keepStep: state.step, newLineage: true });
  emit("rank", { rank });
  showInAddress();
}

/** "GPT (torch 2.13.0)" for an imported run, else its spec's name: what a run from elsewhere is called. */
export function runTitle(trace) {
  const source = trace?.source;
  if (source?.kind === "torch") return `${source.model} (torch ${source.torch_version})`;
  return trace?.spec?.name ?? "a recorded run";
}

/** True when a run has no spec our engine can trace (an import: it names its `source`). */
export const recordedElsewhere = (trace) => Boolean(trace?.source);

/** A run whose spec is not ours to send: opened from a file here, or recorded elsewhere. */
export const isOffline = (trace = state.trace) => Boolean(trace) && (state.openedDocument === trace || recordedElsewhere(trace));

/** A run.json opened here (dropped or picked), as parsed (schema_version 1 or 2, or a run of many ranks: `rank`'s
 * document shown, rank 0 unless the address named another): shown decoded and read-only from
 * here on, nothing saved, posted as it came if shared; a trace request still in flight is dropped, so it cannot
 * replace the document when it lands. */
export function loadDocument(file, fileName = "", { rank = 0 } = {}) {
  const trace = openRun(file, rank);
  clearTimeout(timer);
  timer = null;
  pending = null;
  generation++;
  controller?.abort();
  state.readOnly = true;
  state.openedDocument = trace;
  state.openedFile = file;
  state.spec = clone(trace.spec ?? null);
  state.origin = { kind: "file", title: fileName ? `${runTitle(trace)} · ${fileName}` : runTitle(trace) };
  state.checkpoint = { ...state.checkpoint, ...NO_CHECKPOINT, recompute: [] };
  state.baseline = null;
  state.step = 0;
  state.selected = null;
  emit("spec");
  emit("checkpoint");
  show(trace, { ...entry(), keepStep: 0, newLineage: true });
  if (state.run) { emit("rank", { rank: state.rank }); showInAddress(); }
}

// ------------------------------ autosave (autosave.js) ------------------------------

/** What the session stores: the settled entry, the view, the history and the baseline as a spec (never a trace). */
function documentOf() {
  const { spec, checkpoint, origin } = state.committed ?? entry();
  const baseline = state.baseline ? { spec: state.baseline.spec, checkpoint: state.baseline.checkpoint,
    origin: state.baseline.origin, label: state.baseline.label } : null;
  return { spec, checkpoint, origin, baseline, version: state.version,
    view: { step: state.step, selected: state.selected, zoom: state.zoom, unfolded: state.unfolded }, history: state.history };
}

const autosave = createAutosave({ state, documentOf, sameEntry, emit, limit: HISTORY_LIMIT });
const scheduleSave = () => autosave.schedule();
export const { keepMine, takeTheirs } = autosave;
