// modes-view.js — the "Forward vs reverse" panel: how many sweeps a full Jacobian of the loss and of the logits takes
// in each mode, with the FLOPs and peak bytes the engine measured running them (POST /api/modes, through the
// workspace), and a JVP sweep stepped op by op (jvp-stepper.js). The report is asked for when the panel comes into
// view and the model on screen has none yet; nothing here runs while the panel is out of sight.
import { el } from "../../lib/dom.js";
import { formatBytes, formatCount as count, formatShape } from "../../lib/format.js";
import { createJvpStepper } from "./jvp-stepper.js";
import * as workspace from "../../state/workspace.js";

const bytes = (n) => el("span", { title: `${count(n)} bytes`, text: formatBytes(n) });

const JACOBIANS = [
  { key: "loss", title: "loss", what: (j, input) => `∂L/∂x: 1 × ${count(j.input_elements)} (the gradient of the scalar loss with respect to ${input})` },
  { key: "logits", title: "logits", what: (j, input) => `∂y/∂x: ${count(j.output_elements)} × ${count(j.input_elements)} (every output ${formatShape(j.output_shape)} against every input)` },
];

function modeRow(jacobian, key, mode) {
  const run = jacobian[mode];
  const perSweep = mode === "forward"
    ? `${count(run.sweep_flops)} (forward ${count(run.sweep_primal_flops)} + tangents ${count(run.sweep_tangent_flops)})`
    : `${count(run.sweep_flops)} (after one recorded forward of ${count(run.forward_flops)})`;
  const better = jacobian.forward.total_flops === jacobian.reverse.total_flops ? null
    : (jacobian[mode].total_flops < jacobian[mode === "forward" ? "reverse" : "forward"].total_flops);
  return el("tr", { class: better ? "cheaper" : null, "data-mode": mode },
    el("th", { scope: "row", text: mode === "forward" ? "forward (JVP)" : "reverse (VJP)" }),
    el("td", { "data-testid": `modes-${mode}-sweeps`, "data-jacobian": key, text: count(run.sweeps) }),
    el("td", { text: mode === "forward" ? "one per input element" : "one per output element" }),
    el("td", { text: perSweep }),
    el("td", { text: count(run.total_flops) }),
    el("td", {}, bytes(run.sweep_peak_bytes)),
    el("td", {}, bytes(run.total_peak_bytes)),
    el("td", {}, bytes(run.saved_bytes)));
}

function jacobianTable(report) {
  const head = el("tr", {}, ["mode", "sweeps", "why that many", "FLOPs per sweep", "FLOPs in total", "peak per sweep",
    "peak in total", "saved by the tape"].map((text) => el("th", { scope: "col", text })));
  const bodies = JACOBIANS.map(({ key, title, what }) => {
    const jacobian = report.jacobians[key];
    return el("tbody", { "data-jacobian": key },
      el("tr", { class: "jacobian-head" }, el("th", { colspan: 8, scope: "rowgroup" },
        el("strong", { text: `Jacobian of the ${title}` }), " ", what(jacobian, report.input.name))),
      modeRow(jacobian, key, "forward"), modeRow(jacobian, key, "reverse"));
  });
  return el("table", { class: "modes-table", "aria-label": "Sweeps, FLOPs and peak bytes of each mode" }, el("thead", {}, head), ...bodies);
}

function verdict(report) {
  const loss = report.jacobians.loss;
  const logits = report.jacobians.logits;
  const times = (a, b) => (b > 0 ? `${(a / b).toLocaleString("en-US", { maximumFractionDigits: 1 })}×` : "—");
  const agree = (d) => (d === 0 ? "exactly" : `to ${d.toExponential(1)}`);
  return el("p", { class: "modes-verdict" },
    `For the loss, reverse mode needs 1 sweep where forward mode needs ${count(loss.forward.sweeps)} — ${times(loss.forward.total_flops, loss.reverse.total_flops)} the FLOPs. `,
    `For the logits it is ${count(logits.reverse.sweeps)} VJP sweeps against ${count(logits.forward.sweeps)} JVP sweeps. `,
    loss.max_abs_difference === 0 && logits.max_abs_difference === 0 ? "Both modes built identical Jacobians."
      : `Both modes' Jacobians agree ${agree(loss.max_abs_difference)} (loss) and ${agree(logits.max_abs_difference)} (logits).`);
}

/** section: the panel; controls of the JVP stepper live inside it. */
export function createModesView(section) {
  const body = section.querySelector(".modes-body");
  const status = section.querySelector(".modes-status");
  const runButton = section.querySelector("[data-testid='modes-run']");
  const stepper = createJvpStepper(section.querySelector(".jvp-stepper"));
  let visible = false;

  const want = () => {
    if (workspace.isOffline()) { showOffline(); return; }      // no spec of ours: nothing to run, nothing sent
    if (visible && workspace.state.traced && !workspace.modesCurrent()) workspace.requestModes();
  };

  function showOffline() {
    section.dataset.state = "offline";
    runButton.hidden = true;
    status.textContent = "A recorded run: forward vs reverse mode is executed on our engine's own models, and this run "
      + "brings no spec to execute. Open a preset to compare the two modes.";
    body.replaceChildren();
    stepper.clear();
  }

  function show({ report, running, failure }) {
    section.dataset.state = running ? "running" : failure ? "failed" : report ? "ready" : "idle";
    runButton.hidden = !failure || failure.status === 413 || failure.status === 400;   // only a busy or lost server is worth retrying
    if (running) { status.textContent = "Building both Jacobians on the engine, one sweep at a time…"; return; }
    if (failure) {
      const why = failure.body?.cap === "work"
        ? " Forward mode takes one sweep per input element (batch × input size) and each one is a run of the model: a smaller batch brings it under the budget."
        : "";
      const sentence = String(failure.body?.error ?? failure.status).replace(/([^.])$/, "$1.");
      status.textContent = `Could not run the sweeps: ${sentence}${why}`;
      body.replaceChildren();
      stepper.clear();
      return;
    }
    status.textContent = `Executed on ${report.input.name} ${formatShape(report.input.shape)}: ${count(report.input.elements)} input elements.`
      + (report.slice ? ` A slice: ${report.slice.reason}.` : "");
    section.dataset.sliced = report.slice ? "true" : "false";
    body.replaceChildren(jacobianTable(report), verdict(report));
    stepper.load(report);
  }

  runButton.addEventListener("click", () => workspace.requestModes());
  new IntersectionObserver((seen) => { visible = seen.some((s) => s.isIntersecting); want(); }).observe(section);
  workspace.subscribe((kind, detail) => {
    if (kind === "modes") show(detail);
    else if (kind === "jvp-step") stepper.show(detail.step);
    else if (kind === "trace") {
      if (!workspace.modesCurrent()) section.dataset.state = "stale";
      want();
    }
  });
  return { refresh: want };
}
