// Undo/redo over applied specs: a list of good specs and a cursor. Only specs that traced become entries.
import { clone, same } from "./editor-spec.js";

export function createHistory(limit = 200) {
  let entries = [];
  let cursor = -1;
  return {
    current: () => (cursor >= 0 ? clone(entries[cursor]) : null),
    isCurrent: (spec) => cursor >= 0 && same(entries[cursor], spec),
    push(spec) {
      if (cursor >= 0 && same(entries[cursor], spec)) return;
      entries = entries.slice(0, cursor + 1);
      entries.push(clone(spec));
      if (entries.length > limit) entries.shift();
      cursor = entries.length - 1;
    },
    canUndo: () => cursor > 0,
    canRedo: () => cursor < entries.length - 1,
    undo: () => (cursor > 0 ? clone(entries[--cursor]) : null),
    redo: () => (cursor < entries.length - 1 ? clone(entries[++cursor]) : null),
  };
}
