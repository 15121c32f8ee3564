// dial-caps.js — where a memory dial meets a size cap, for this model: once a value on a dial is refused as over a
// cap (413), the dial carries a mark there and says what lies beyond it, so a learner sees the edge before the next
// drag. A mark belongs to the model with every other field as it was: change anything else and it is gone.
import { el } from "../../lib/dom.js";
import { capMessage } from "./problems.js";
import { clone, getAt, setAt } from "../../model/spec.js";

const marks = new Map();          // dial path -> { model, value, words }
const DIALS = ".dials input[type=range][data-path]";

/** The model a mark belongs to: the spec with that dial's value taken out. */
function modelKey(spec, path) {
  const rest = clone(spec);
  setAt(rest, path, null);
  return JSON.stringify(rest);
}

/** A refusal came for `asked` after `settled` traced: an over-cap value on exactly one dial marks that dial (at the
 * lowest value refused so far); the marks drawn are those of the model asked for. */
export function noteRefusal(form, asked, settled, failure) {
  const moved = asked && settled ? dialPaths(form).filter((path) => getAt(asked, path) !== getAt(settled, path)) : [];
  const [path] = moved;
  const value = moved.length === 1 ? getAt(asked, path) : null;
  if (failure.status === 413 && typeof value === "number" && value > getAt(settled, path)) {
    const model = modelKey(asked, path);
    const known = marks.get(path);
    if (!known || known.model !== model || value < known.value) marks.set(path, { model, value, words: capMessage(failure.body) });
  }
  drawMarks(form, asked);
}

/** A value traced: a mark at or below it was not the edge after all (another field changed first). */
export function noteTraced(form, spec) {
  for (const [path, mark] of marks) {
    if (mark.model === modelKey(spec, path) && getAt(spec, path) >= mark.value) marks.delete(path);
  }
  drawMarks(form, spec);
}

const dialPaths = (form) => [...form.querySelectorAll(DIALS)].map((input) => input.dataset.path);

/** Each dial's mark for the model on screen, or none. */
export function drawMarks(form, spec) {
  for (const input of form.querySelectorAll(DIALS)) {
    const field = input.closest(".field");
    field.querySelector(".cap-mark")?.remove();
    const mark = marks.get(input.dataset.path);
    if (!mark || !spec || mark.model !== modelKey(spec, input.dataset.path)) continue;
    const min = Number(input.min), max = Number(input.max);
    const at = Math.min(1, Math.max(0, (mark.value - min) / (max - min || 1)));
    const thumb = 16;                                   // the track runs between the thumb's half-widths
    const left = input.offsetLeft + thumb / 2 + at * Math.max(0, input.offsetWidth - thumb);
    field.append(el("span", {
      class: "cap-mark", "data-testid": "cap-mark", "data-path": input.dataset.path, "data-value": mark.value,
      style: `left:${left.toFixed(1)}px`, title: `${mark.value.toLocaleString("en-US")} was refused: ${mark.words}`,
    }, el("span", { class: "cap-mark-words", text: `over the cap at ${mark.value.toLocaleString("en-US")}` })));
  }
}
