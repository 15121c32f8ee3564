// draft.js — the workspace's latest edits kept in this browser (localStorage) until the server holds them: a save
// the server refused (429, 507, offline), a workspace it evicted or a reload mid-save loses nothing. One draft per
// browser, the whole document with the version it started from; dropped once a save lands with nothing pending.
const KEY = "tapescope.workspace-draft";

export function keepDraft(document) {
  try { localStorage.setItem(KEY, JSON.stringify({ document, keptAt: Date.now() })); } catch { /* storage full or off */ }
}

/** The kept draft, { document, keptAt }, or null. */
export function readDraft() {
  try {
    const draft = JSON.parse(localStorage.getItem(KEY) ?? "null");
    return draft?.document?.spec ? draft : null;
  } catch { return null; }
}

export function dropDraft() {
  try { localStorage.removeItem(KEY); } catch { /* nothing kept */ }
}
