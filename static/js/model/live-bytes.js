// live-bytes.js — the page's memory core: whether a lifetime covers a step, and what is alive at a step grouped by
// scope × kind. The rule is the backend's (backend/trace/memory.py): a storage is live at every step s with
// born ≤ s ≤ freed, both ends included, and to the end of the run when never freed; views share their base's
// storage, so each storage counts once. The live bytes per step themselves are the document's (steps[].live_bytes):
// nothing here sums a timeline again.

/** Whether `lifetime` ({born, freed}, a storage or a tensor) is alive at `step`. */
export const isAlive = (lifetime, step) => lifetime.born <= step
  && (lifetime.freed === null || lifetime.freed === undefined || step <= lifetime.freed);

/** The storages alive at `step` grouped by (scope, kind), largest first (then by scope; equals keep the storages'
 * order): [{scope, kind, bytes, storages}]. `scopeOf(storage)` names a storage's group, its own scope by default
 * (backend/trace/memory.py's holders_at groups the same way). */
export function holdersAt(step, storages, scopeOf = (storage) => storage.scope) {
  const groups = new Map();
  for (const storage of storages) {
    if (!isAlive(storage, step)) continue;
    const scope = scopeOf(storage);
    const key = `${scope}|${storage.kind}`;
    let group = groups.get(key);
    if (!group) {
      group = { scope, kind: storage.kind, bytes: 0, storages: [] };
      groups.set(key, group);
    }
    group.bytes += storage.nbytes;
    group.storages.push(storage);
  }
  return [...groups.values()].sort((a, b) => b.bytes - a.bytes || a.scope.localeCompare(b.scope));
}
