// jvp-stepper.js — one JVP sweep stepped forward op by op, with the page's player conventions (player.js, clicks
// only: the arrow keys stay with the main player): the panel shows each op's value and the tangent it carries beside
// it, and the workspace selects the op's tape entry so the graph lights it. The direction is one input element.
import { el, facts } from "../../lib/dom.js";
import { formatCount, formatNumber, formatShape } from "../../lib/format.js";
import { createPlayer } from "../player.js";
import * as workspace from "../../state/workspace.js";

const stats = (s) => (s ? `‖·‖ ${formatNumber(s.norm)} · min ${formatNumber(s.min)} · max ${formatNumber(s.max)}` : "none (no path from the direction)");

/** Where the op sits on the graph on screen: its tape entry, unless the trace shown numbers its entries otherwise. */
function entryText(at) {
  if (at.entry === null) return " (not on the trace's tape)";
  const shown = workspace.state.trace?.tape[at.entry];
  return shown?.op === at.op ? ` — tape entry ${at.entry}`
    : ` — entry ${at.entry} of the run without checkpoints (the graph on screen numbers its entries differently)`;
}

export function createJvpStepper(root) {
  const byTestId = (id) => root.querySelector(`[data-testid="${id}"]`);
  const detail = root.querySelector(".jvp-detail");
  const element = byTestId("jvp-element");
  const refusal = el("p", { class: "field-error", "data-testid": "jvp-element-error", role: "alert", hidden: true });
  root.querySelector(".jvp-controls").after(refusal);
  let steps = [];
  let report = null;
  const player = createPlayer({
    play: byTestId("jvp-play"), back: byTestId("jvp-step-back"), forward: byTestId("jvp-step-forward"),
    start: root.querySelector(".jvp-start"), end: root.querySelector(".jvp-end"),
    scrub: byTestId("jvp-scrub"), speed: root.querySelector(".jvp-speed"),
  }, { onStep: (step) => { if (steps.length && step !== workspace.state.modes.jvpStep) workspace.setJvpStep(step); }, keys: false });

  element.addEventListener("change", () => {
    const wanted = Number(element.value);
    const kept = workspace.state.modes.element;
    const fits = report && element.value.trim() !== "" && Number.isInteger(wanted) && wanted >= 0 && wanted < report.input.elements;
    refusal.hidden = fits || !report;
    if (fits) { workspace.requestModes(wanted); return; }
    if (report) {
      const { name, shape, elements } = report.input;
      refusal.textContent = `"${element.value}" is not an input element here: ${name} ${formatShape(shape)} has `
        + `${formatCount(elements)}, numbered 0 to ${formatCount(elements - 1)}. `
        + `The sweep stays on element ${kept}; type a whole number in that range.`;
    }
    element.value = String(kept);
  });

  function load(next) {
    report = next;
    refusal.hidden = true;
    steps = next.jvp_sweep.steps;
    root.hidden = false;
    element.max = String(next.input.elements - 1);
    element.value = String(next.jvp_sweep.direction.element);
    byTestId("jvp-direction").textContent = `e${next.jvp_sweep.direction.element}: x${formatShape(next.jvp_sweep.direction.index)} moves, every other input element stays`;
    player.reset(steps.length - 1, 0);
  }

  function show(step) {
    if (!steps.length) return;
    if (player.getStep() !== step) player.setStep(step);
    const at = steps[step];
    root.dataset.step = String(step);
    root.dataset.entry = at.entry === null ? "" : String(at.entry);
    detail.replaceChildren(
      el("p", { "data-testid": "jvp-step-op" }, el("strong", { text: `Op ${step + 1} of ${steps.length}: ${at.op}` }),
        entryText(at), at.scope ? ` · ${at.scope}` : ""),
      facts([
        ["shape", formatShape(at.shape)],
        ["value", el("span", { "data-testid": "jvp-value", text: stats(at.value) })],
        ["tangent", el("span", { "data-testid": "jvp-tangent", text: stats(at.tangent) })],
        ["FLOPs", `${formatCount(at.flops)} (its forward; its jvp costs about as much again per input carrying a tangent)`],
      ]),
      step === steps.length - 1
        ? el("p", { class: "hint", text: `The loss's tangent, ${formatNumber(report.jvp_sweep.loss.tangent)}, is ∂L/∂x${formatShape(report.jvp_sweep.direction.index)}: one column of the Jacobian per sweep. Nothing was saved for a backward.` })
        : el("p", { class: "hint", text: "The tangent is computed as the value is, then both move on: forward mode keeps no tape." }));
  }

  function clear() { steps = []; report = null; root.hidden = true; detail.replaceChildren(); }

  return { load, show, clear };
}
