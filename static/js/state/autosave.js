// autosave.js — the workspace reaching PUT /api/session: settled changes debounced (never every frame), one save in
// flight, the version it started from sent along; a 409 (another tab saved first) stops saving and raises the
// conflict, resolved by keepMine() or takeTheirs(), each keeping the other version one undo away. A save the server
// refused otherwise (429, 503, 507, offline) is never silent: the state is "failed" with the reason, the edit stays
// in this browser (draft.js) and the save is retried after the server's Retry-After. Leaving the page sends a
// pending save with keepalive; coming Back from the back/forward cache checks the session moved on.
import { fetchSession, saveSession } from "./api.js";
import { dropDraft, keepDraft } from "./draft.js";
import { same } from "../model/spec.js";
import { normalizeRequest } from "../model/schedule.js";

const SAVE_AFTER_MS = 600;        // a settled change reaches the session within a second
const RETRY_MS = [2000, 5000, 15000, 30000, 60000];   // without a Retry-After: backing off, then once a minute
const REFUSALS = { 429: "too many saves from your address", 503: "the server is busy", 507: "the server's storage is full" };

/** "in 30 s", "in 5 min", "in 24 h": when the next try is. */
function inAbout(ms) {
  const s = Math.round(ms / 1000);
  return s < 90 ? `in ${s} s` : s < 5400 ? `in ${Math.round(s / 60)} min` : `in ${Math.round(s / 3600)} h`;
}

/** state: the workspace's state; documentOf(): the document to save; sameEntry(a, b); emit(kind, detail); limit. */
export function createAutosave({ state, documentOf, sameEntry, emit, limit }) {
  let timer = null;
  let saving = null;
  let dirty = false;
  let sentOnHide = null;

  let settlesAt = 0;        // SAVE_AFTER_MS after the latest change
  let failures = 0;         // in a row, for the back-off

  function schedule() {
    if (state.readOnly || !state.committed || state.conflict) return;
    dirty = true;
    if (state.saveState !== "failed") setState("pending");     // a failed save keeps saying so until one lands
    settlesAt = performance.now() + SAVE_AFTER_MS;
    if (!timer) timer = setTimeout(whenSettled, SAVE_AFTER_MS);
  }

  function setState(saveState, reason = null, detail = null) {
    state.saveState = saveState;
    state.saveError = reason;
    emit("save", { saveState, conflict: state.conflict, reason, detail });
  }

  /** The timer is armed once per burst of changes, not cleared and re-armed at each (a step a frame, stepping by hand):
   * when it fires before the latest change has settled, it waits out the rest. */
  function whenSettled() {
    const rest = settlesAt - performance.now();
    if (rest > 0) timer = setTimeout(whenSettled, rest);
    else saveNow();
  }

  async function saveNow() {
    clearTimeout(timer);
    timer = null;
    if (!dirty || state.conflict || state.readOnly) return;
    if (saving) { await saving.catch(() => {}); return saveNow(); }
    dirty = false;
    if (state.saveState !== "failed") setState("saving");
    const body = documentOf();
    keepDraft(body);                          // until the server has it
    saving = save(body);
    try { await saving; } finally { saving = null; }
  }

  async function save(body) {
    try {
      const saved = await saveSession(body);
      state.version = saved.version;
      failures = 0;
      if (!dirty) dropDraft();
      setState(dirty ? "pending" : "saved");
    } catch (error) {
      if (error.status === 409) {
        state.conflict = error.body.current;
        setState("conflict", "another tab saved this workspace first");
      } else if (error.status === 413 && state.history.undo.length) {   // over the cap: drop the oldest half, retry
        state.history.undo = state.history.undo.slice(Math.ceil(state.history.undo.length / 2));
        dirty = true;
        setState("pending");
        timer = setTimeout(saveNow, 0);
      } else {
        retryLater(error);
      }
    }
  }

  /** A refused or lost save: said so, kept in this browser, sent again when the server said it would take it. */
  function retryLater(error) {
    const waitMs = error.retryAfter ? 1000 * error.retryAfter : RETRY_MS[Math.min(failures, RETRY_MS.length - 1)];
    failures += 1;
    dirty = true;
    clearTimeout(timer);
    timer = setTimeout(saveNow, waitMs);
    const why = REFUSALS[error.status] ?? (error.status ? `the server answered ${error.status}` : "the server could not be reached");
    setState("failed", `${why}. Kept in this browser; trying again ${inAbout(waitMs)}.`, error.message);
  }

  const entryOf = (doc) => (doc?.spec ? { spec: doc.spec, checkpoint: normalizeRequest(doc.checkpoint), origin: doc.origin ?? null } : null);

  /** "Keep mine": theirs goes on my undo list and mine is saved over it. */
  function keepMine() {
    const theirs = state.conflict;
    if (!theirs) return undefined;
    const their = entryOf(theirs);
    if (their && !sameEntry(their, state.committed)) state.history.undo = [...state.history.undo, their].slice(-limit);
    state.version = theirs.version;
    state.conflict = null;
    emit("history");
    schedule();
    return saveNow();
  }

  /** "Reload theirs": mine goes on their undo list (one undo away), saved, then the page reloads on theirs. */
  async function takeTheirs() {
    const theirs = state.conflict;
    if (!theirs) return;
    const mine = state.committed;
    const undo = theirs.history?.undo ?? [];
    const kept = mine && !sameEntry(mine, entryOf(theirs)) ? [...undo, mine].slice(-limit) : undo;
    const { updated_at: _, ...document } = theirs;
    try { await saveSession({ ...document, history: { undo: kept, redo: theirs.history?.redo ?? [] } }); } finally { window.location.reload(); }
  }

  window.addEventListener("pagehide", () => {
    if (!dirty || state.conflict || state.readOnly) return;
    clearTimeout(timer);
    dirty = false;
    sentOnHide = documentOf();
    keepDraft(sentOnHide);
    saveSession(sentOnHide, { keepalive: true }).then((saved) => { state.version = saved.version; }).catch(() => {});
  });

  window.addEventListener("pageshow", async (event) => {
    if (!event.persisted || state.readOnly || !state.committed) return;
    const current = await fetchSession().catch(() => null);
    if (!current?.version || current.version === state.version) return;
    const ours = sentOnHide;
    if (ours && same(current.spec, ours.spec) && same(current.view, ours.view) && same(current.history, ours.history)) {
      state.version = current.version;
    } else {
      state.conflict = current;
      setState("conflict", "another tab saved this workspace first");
    }
  });

  return { schedule, saveNow, keepMine, takeTheirs };
}
