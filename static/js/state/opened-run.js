// opened-run.js — a run.json this tab opened, kept in this browser so a reload shows it again: the document in
// IndexedDB (a run may be tens of MiB, past what localStorage holds), and in this tab's sessionStorage whether it was
// showing one (another tab opens the workspace as before). Closing the run ("Close run") forgets both.
const DATABASE = "tapescope";
const STORE = "opened-run";
const KEY = "run";
const SHOWING = "tapescope.showing-run";

function database() {
  return new Promise((resolve, reject) => {
    const opening = indexedDB.open(DATABASE, 1);
    opening.onupgradeneeded = () => opening.result.createObjectStore(STORE);
    opening.onsuccess = () => resolve(opening.result);
    opening.onerror = () => reject(opening.error);
  });
}

async function withStore(mode, work) {
  const db = await database();
  try {
    return await new Promise((resolve, reject) => {
      const transaction = db.transaction(STORE, mode);
      const request = work(transaction.objectStore(STORE));
      transaction.oncomplete = () => resolve(request.result);
      transaction.onerror = () => reject(transaction.error);
      transaction.onabort = () => reject(transaction.error);
    });
  } finally {
    db.close();
  }
}

/** Keep `document` (as opened, before reading) and its file name; a browser that will not store it just forgets. */
export async function keepOpenedRun(document, fileName) {
  try {
    sessionStorage.setItem(SHOWING, "1");
    await withStore("readwrite", (store) => store.put({ document, fileName, keptAt: Date.now() }, KEY));
  } catch { /* storage off or full: the run is open now, a reload goes back to the workspace */ }
}

/** The run this tab was showing, {document, fileName}, or null. */
export async function readOpenedRun() {
  try {
    if (!sessionStorage.getItem(SHOWING)) return null;
    return (await withStore("readonly", (store) => store.get(KEY))) ?? null;
  } catch { return null; }
}

export async function forgetOpenedRun() {
  try {
    sessionStorage.removeItem(SHOWING);
    await withStore("readwrite", (store) => store.delete(KEY));
  } catch { /* nothing kept */ }
}
