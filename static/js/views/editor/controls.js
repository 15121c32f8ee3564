// Small form controls bound to a spec path: number, range (with its value shown), checkbox, select, a choice of
// words or a number, and text.
// Each is a <label class="field" data-field=path> holding an input with data-path=path; `onValue(path, value)`
// receives the parsed value. syncControls writes a spec's values back into every bound control.
import { el } from "../../lib/dom.js";
import { getAt } from "../../model/spec.js";


const parseNumber = (raw) => (raw.trim() === "" ? raw : Number.isFinite(Number(raw)) ? Number(raw) : raw);

function wrap(label, path, input, extra, className = "field") {
  return el("label", { class: className, "data-field": path }, el("span", { class: "label", text: label }), input, extra);
}

export function numberControl(label, path, value, onValue, { min, max, step = 1 } = {}) {
  const input = el("input", { type: "number", inputmode: "numeric", min, max, step, "data-path": path });
  input.value = value ?? "";
  input.addEventListener("input", () => onValue(path, parseNumber(input.value)));
  return wrap(label, path, input);
}

/** Two number inputs for one [a, b] field (Adam's betas): an edit of either reports the whole pair. The inputs are
 * bound to "path[0]" and "path[1]", where the server's problems about each number point. */
export function pairControls(labels, path, pair, onValue, options) {
  const report = () => onValue(path, controls.map((control) => parseNumber(control.querySelector("input").value)));
  const controls = labels.map((label, i) => numberControl(label, `${path}[${i}]`, pair?.[i], report, options));
  return controls;
}

export function rangeControl(label, path, value, onValue, { min = 0, max = 1, step = 0.05, field = true, mode } = {}) {
  const input = el("input", { type: "range", min, max, step, "data-path": path, "data-mode": mode });
  input.value = value ?? min;
  const shown = el("output", { class: "range-value", text: String(value ?? "") });
  input.addEventListener("input", () => {
    shown.textContent = input.value;
    onValue(path, Number(input.value), "throttle");
  });
  const control = wrap(label, path, input, shown, "field range");
  if (!field) delete control.dataset.field;      // a dial: errors go to the form field with the same path
  return control;
}

export function checkControl(label, path, value, onValue) {
  const input = el("input", { type: "checkbox", "data-path": path });
  input.checked = Boolean(value);
  input.addEventListener("change", () => onValue(path, input.checked));
  return wrap(label, path, input, null, "field check");
}

export function selectControl(label, path, value, options, onChange, { disabled } = {}) {
  const input = el("select", { "data-path": path, disabled });
  for (const option of options) input.append(el("option", { value: option, text: option }));
  input.value = value ?? options[0];
  input.addEventListener("change", () => onChange(path, input.value));
  return wrap(label, path, input);
}

/** A choice of words or a number (precision.loss_scale: "dynamic", "none" or a fixed 1024): a select of the words
 * and "number" and, while "number" is chosen, a number box over [min, max] bound to `path`. Choosing "number" reports
 * `start`; any word reports itself; typing reports the number. */
export function choiceOrNumberControl(label, path, value, words, onValue, { min, max, start }) {
  const numeric = typeof value === "number";
  const select = el("select", { "aria-label": `${label}: ${words.join(", ")} or a number`, "data-choice-of": path });
  for (const option of [...words, "number"]) select.append(el("option", { value: option, text: option }));
  select.value = numeric ? "number" : value ?? words[0];
  const box = el("input", { type: "number", min, max, step: "any", "data-path": path, "aria-label": `${label} (a number)` });
  box.value = numeric ? value : "";
  box.hidden = !numeric;
  select.addEventListener("change", () => {
    box.hidden = select.value !== "number";
    if (!box.hidden) box.value = start;
    onValue(path, box.hidden ? select.value : start);
  });
  box.addEventListener("input", () => onValue(path, parseNumber(box.value)));
  return wrap(label, path, select, box, "field choice-number");
}

export function textControl(label, path, value, onValue, { maxlength = 80, placeholder } = {}) {
  const input = el("input", { type: "text", maxlength, placeholder, spellcheck: "false", "data-path": path });
  input.value = value ?? "";
  input.addEventListener("input", () => onValue(path, input.value));
  return wrap(label, path, input);
}

/** Write the spec's values into every bound control except the one being typed in. */
export function syncControls(root, spec) {
  for (const input of root.querySelectorAll("[data-path]")) {
    if (input === document.activeElement && input.type !== "range") continue;
    const value = getAt(spec, input.dataset.path);
    if (input.type === "checkbox") { if (value !== undefined) input.checked = Boolean(value); }    // absent: the default drawn
    else if (value !== undefined && String(input.value) !== String(value)) input.value = value;
    const shown = input.parentElement?.querySelector("output.range-value");
    if (shown && value !== undefined) shown.textContent = String(value);
  }
}
