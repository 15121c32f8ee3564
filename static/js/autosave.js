// autosave.js — the workspace reaching PUT /api/session: settled changes debounced (never every frame), one save in
// flight, the version it started from sent along; a 409 (another tab saved first) stops saving and raises the
// conflict, resolved by keepMine() or takeTheirs(), each keeping the other version one undo away. Leaving the page
// sends a pending save with keepalive; coming Back from the back/forward cache checks the session moved on.
import { fetchSession, saveSession } from "./api.js";
import { same } from "./editor-spec.js";
import { normalizeRequest } from "./schedule.js";

const SAVE_AFTER_MS = 600;        // a settled change reaches the session within a second

/** state: the workspace's state; documentOf(): the document to save; sameEntry(a, b); emit(kind, detail); limit. */
export function createAutosave({ state, documentOf, sameEntry, emit, limit }) {
  let timer = null;
  let saving = null;
  let dirty = false;
  let sentOnHide = null;

  let settlesAt = 0;        // SAVE_AFTER_MS after the latest change

  function schedule() {
    if (state.readOnly || !state.committed || state.conflict) return;
    dirty = true;
    state.saveState = "pending";
    settlesAt = performance.now() + SAVE_AFTER_MS;
    if (!timer) timer = setTimeout(whenSettled, SAVE_AFTER_MS);
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
    state.saveState = "saving";
    saving = save(documentOf());
    try { await saving; } finally { saving = null; }
  }

  async function save(body) {
    try {
      const saved = await saveSession(body);
      state.version = saved.version;
      state.saveState = dirty ? "pending" : "saved";
    } catch (error) {
      if (error.status === 409) {
        state.conflict = error.body.current;
        state.saveState = "conflict";
      } else if (error.status === 413 && state.history.undo.length) {   // over the cap: drop the oldest half, retry
        state.history.undo = state.history.undo.slice(Math.ceil(state.history.undo.length / 2));
        dirty = true;
        state.saveState = "pending";
        timer = setTimeout(saveNow, 0);
      } else {
        state.saveState = "failed";
      }
    }
    emit("save", { saveState: state.saveState, conflict: state.conflict });
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
      state.saveState = "conflict";
      emit("save", { saveState: state.saveState, conflict: current });
    }
  });

  return { schedule, saveNow, keepMine, takeTheirs };
}
