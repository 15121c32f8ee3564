// sweep.js — the backward panel: the vjp at the cursor, the saved tensors it reads and why, contributions, +=, ready queue, frees.
// Checkpointed runs: a checkpoint's backward says what it re-runs; recompute steps and the unrecorded ops inside a
// checkpoint's forward say what they save (again) or why they save nothing. A collective's step (a run of many ranks)
// says what it moves and what it overlaps (collective.js).
import { el, facts } from "../../lib/dom.js";
import { formatBytes, formatShape } from "../../lib/format.js";
import { blocksText, recomputedForText, regionText } from "../../model/trace-index.js";
import { collectiveBlock, isCollective } from "./collective.js";

const name = (index, id) => index.nameOf(id);
/** Gradients often share a name (x*x makes two "dx"), so the sweep writes each with its tensor id. */
const gradName = (index, id) => `${name(index, id)}#${id}`;

/** One chip per tensor id (a click selects it); `look(tensor)` may give a chip its own class and title, and a note
 * written after it. */
function tensorChips(index, ids, look = () => ({})) {
  if (!ids.length) return el("span", { class: "none", text: "none" });
  return el("span", {}, ids.flatMap((id) => {
    const tensor = index.tensor(id);
    const { chipClass = "chip", title = "select this tensor", note = null } = look(tensor);
    const chip = el("span", { class: chipClass, "data-select": `t${id}`, role: "button", tabindex: 0, title,
      text: `${tensor.name} ${formatShape(tensor.shape)} · ${formatBytes(tensor.nbytes)}` });
    return note ? [chip, el("span", { class: "chip-note", text: note })] : [chip];
  }));
}

/** The saved tensors this node lets go of once it has run. Only some of them leave memory now (struck through); each
 * other says, beside it, why its memory stays: a parameter or an input, another node that saved it, a Tensor the
 * program still holds. Released is not freed: a learner reads the list as memory given back otherwise. */
function releasedChips(index, ids, step) {
  return tensorChips(index, ids, (tensor) => {
    if (tensor.freed === step) {
      return { chipClass: "chip freed-chip", title: "released by the tape; its memory is freed now (click to select)" };
    }
    const stays = whyItStays(tensor, index, step);
    return { title: `released by the tape; its memory stays: ${stays} (click to select)`, note: `stays: ${stays}` };
  });
}

/** Why a released tensor's memory is not freed at `step`, in a few words. */
function whyItStays(tensor, index, step) {
  if (tensor.kind === "param") return "a parameter";
  if (tensor.kind === "input") return "an input";
  if (index.held(tensor, step)) return "another node saved it too";
  return tensor.freed === null ? "in use to the end of the step" : `freed at step ${tensor.freed}`;
}

function accumulation(index, item) {
  const parts = item.parts.map((id) => gradName(index, id));
  const target = item.into === "buffer" ? `${name(index, item.tensor)}'s grad buffer` : `${name(index, item.tensor)}.grad`;
  const text = item.parts.length > 1
    ? `${target} += ${parts.join(" + ")} = ${gradName(index, item.total)}`
    : `${target} ${item.first ? "=" : "+="} ${parts[0]}${item.first ? " (first arrival)" : ""}`;
  return el("li", { "data-testid": "accumulation", "data-into": item.into, "data-tensor": item.tensor,
    "data-parts": item.parts.length }, text);
}

const stepRange = (steps) => (steps.length === 1 ? `step ${steps[0]}` : `steps ${steps[0]}–${steps[steps.length - 1]}`);

/** An unrecorded cast autocast inserted (step.autocast: the dtype it casts to): not a frozen prefix, a cast of an
 * input nothing needs a gradient through. */
function autocastCast(step) {
  return el("div", { class: "checkpoint-note", "data-testid": "autocast-cast" },
    el("p", {}, `Autocast casting an input to ${step.autocast} without the tape: torch.autocast casts an op's inputs `
      + "before it runs, and this one needs no gradient (the input x, or a frozen parameter), so the cast is not "
      + "recorded and saves nothing."),
    el("p", { class: "hint", text: `The next op reads the ${step.autocast} copy (matmul and attention run in the compute `
      + "dtype; reductions, norms and losses in float32). A trainable parameter's cast is a tape entry (ToCopyBackward0)." }));
}

function forwardSummary(index, step) {
  if (step.recorded === false && step.entry === null && step.autocast) return autocastCast(step);
  if (step.recorded === false && step.entry === null) {
    return el("div", { class: "checkpoint-note", "data-testid": "unrecorded" },
      el("p", {}, `Running ${step.op ?? "an op"} without the tape: no input needs a gradient here (under no_grad, after a detach, or before the first parameter that still needs grad), so nothing is recorded and nothing is saved.`),
      el("p", { class: "hint", text: "Its output is dropped once the next op has used it, as PyTorch prunes a frozen prefix." }));
  }
  const entry = index.trace.tape[step.entry];
  if (!entry) return el("p", { class: "hint", text: "Step to the backward pass to see the adjoint sweep." });
  const region = blocksText(index.regions.get(entry.index));
  if (step.recorded === false) {
    return el("div", { class: "checkpoint-note" },
      el("p", {}, `Running ${step.op ?? "an op"} inside checkpoint entry ${entry.index}${region ? ` (${region})` : ""} without the tape: it saves nothing, and its output is dropped once the next op has used it.`),
      el("p", {}, "The checkpoint keeps only its input: ", tensorChips(index, entry.saved), "."),
      el("p", { class: "hint", text: "Backward will re-run this region with the tape on to get the rest back." }));
  }
  if (step.phase === "recompute") {
    const owner = recomputedForText(index, entry.index);
    return el("div", { class: "checkpoint-note" },
      el("p", {}, `↻ Recomputing ${entry.op} (entry ${entry.index})${owner ? ` for ${owner}` : ""}: the region's forward runs again, recorded this time, `,
        ...(entry.saved.length ? [`and ${entry.op} saves `, tensorChips(index, entry.saved), " again."] : [`and ${entry.op} saves nothing.`])),
      el("p", { class: "why", text: entry.why }),
      el("p", { class: "hint", text: "The backward steps right after this read what it saved, then free it." }));
  }
  if (index.isCheckpoint(entry.index)) {
    return el("div", { class: "checkpoint-note" },
      el("p", {}, `Recording a checkpoint${region ? ` over ${region}` : ""}: it saves only `, tensorChips(index, entry.saved), "."),
      el("p", { class: "why", text: entry.why }),
      el("p", { class: "hint", text: "The ops inside run next without the tape; backward re-runs them." }));
  }
  const inRegion = index.regionOf.get(entry.index);
  if (inRegion) {
    const needs = [...new Set(entry.recomputes ?? [])];
    const intro = `Running ${entry.op} inside ${regionText(inRegion)}, which the model checkpoints (torch.utils.checkpoint): `;
    return el("div", { class: "checkpoint-note", "data-testid": "checkpointed-forward" },
      needs.length ? el("p", {}, intro, "autograd keeps placeholders, not ", tensorChips(index, needs), ".")
        : el("p", {}, `${intro}${entry.op} needs nothing saved for backward.`),
      el("p", { class: "why", text: entry.why }),
      el("p", { class: "hint", text: inRegion.recomputeSteps.length
        ? `Backward re-runs the region (${stepRange(inRegion.recomputeSteps)}) and saves them again.` : "Backward re-runs the region to get them back." }));
  }
  if (entry.recorded_in === "backward") {
    return el("div", { class: "checkpoint-note", "data-testid": "recorded-backward-note" },
      el("p", {}, `Recording ${entry.op} for entry ${entry.recorded_for}'s vjp (create_graph): the backward's own ops go on the tape, and it saves `,
        tensorChips(index, entry.saved), "."),
      el("p", { class: "why", text: entry.why }),
      el("p", { class: "hint", text: "What the first backward saves stays alive until backward-2 sweeps this second tape." }));
  }
  return el("div", {},
    el("p", {}, `Recording ${entry.op}: it saves `, tensorChips(index, entry.saved), "."),
    entry.recomputes?.length ? el("p", { class: "checkpoint-note" }, "↻ It keeps only a recipe for ",
      tensorChips(index, [...new Set(entry.recomputes)]), ": selective recomputation re-derives it in backward.") : null,
    el("p", { class: "why", text: entry.why }),
    el("p", { class: "hint", text: "The sweep runs these entries in reverse once the forward pass ends." }));
}

/** Where backward stopped: the engine's RuntimeError, word for word, and the way out. */
function backwardError(error) {
  return el("div", { class: "backward-error", role: "alert", "data-testid": "backward-error" },
    el("p", {}, el("strong", { text: `Backward stopped here (${error.backward}, entry ${error.entry}): ` }), "RuntimeError: ",
      el("code", { "data-testid": "backward-error-message", text: error.message })),
    el("p", { class: "fix", "data-testid": "backward-error-fix", text: error.fix }));
}

/** The panel's title for the phase a step is in: it describes forward recording, the sweep, a recompute or the
 * update, and says which. */
export const PHASE_TITLES = { forward: "Forward: recording the tape", backward: "Backward sweep", "backward-2": "Second backward sweep",
  recompute: "Recompute (checkpoint)", optimizer: "Optimizer step" };

export function createSweepPanel(element) {
  const body = element.querySelector(".sweep-body");
  const title = element.querySelector("h2");

  function render(index, stepIndex) {
    body.replaceChildren();
    if (!index) return;
    const step = index.trace.steps[stepIndex];
    if (title) title.textContent = PHASE_TITLES[step?.phase] ?? "Backward sweep";
    const error = index.trace.error;
    if (error && error.step === stepIndex) body.append(backwardError(error));
    const item = index.sweepByStep.get(stepIndex);
    const collective = !item && step.entry !== null && step.entry !== undefined ? index.trace.tape[step.entry] : null;
    if (isCollective(collective)) {
      if (title) title.textContent = `${PHASE_TITLES[step.phase] ?? "Backward sweep"}: ranks communicate`;
      body.append(collectiveBlock(index, collective));
      return;
    }
    if (!item) {
      if (step.phase === "optimizer") {
        body.append(el("p", {}, `Optimizer step${step.param !== undefined ? ` on ${typeof step.param === "number" ? name(index, step.param) : step.param}` : ""}: backward has finished and freed every saved tensor — a second backward would raise "Trying to backward through the graph a second time".`));
        // The optimizer's state (momentum, Adam's m and v) is allocated on a parameter's first step: say so there.
        const state = index.trace.tensors.filter((t) => t.kind === "optimizer" && t.born === stepIndex);
        if (state.length) {
          const bytes = state.reduce((total, t) => total + t.nbytes, 0);
          body.append(el("p", { "data-testid": "optimizer-state-born" },
            `Its optimizer state is allocated now and kept across steps: ${state.map((t) => name(index, t.id)).join(", ")} (${formatBytes(bytes)}).`));
        }
      } else body.append(forwardSummary(index, step));
      return;
    }
    const adjoint = item.adjoint;
    const pending = Object.entries(item.pending);
    body.append(
      facts([
        ["vjp", `${item.backward} (entry ${item.entry}, ${item.op})`],
        ["adjoint", `${name(index, adjoint.tensor)} ${formatShape(adjoint.shape)} · norm ${adjoint.norm == null ? "— (recorded without values)" : adjoint.norm.toPrecision(4)}`],
        ["reads", tensorChips(index, item.reads)],
        ["why", el("span", { class: "why", text: item.why })],
      ]),
      el("h3", { text: "Contributions" }),
      el("ul", { class: "contributions" }, item.contributions.map((c) =>
        el("li", { "data-testid": "contribution", "data-to": c.to, "data-select": `t${c.to}`, role: "button", tabindex: 0 },
          `→ ${name(index, c.to)}: ${gradName(index, c.grad)} ${formatShape(c.shape)}`))),
      el("h3", { text: "Accumulation" }),
      item.accumulations.length ? el("ul", { class: "accumulations" }, item.accumulations.map((a) => accumulation(index, a)))
        : el("p", { class: "none", text: "nothing accumulates here" }),
      facts([
        ["ready queue", item.ready.length ? item.ready.map((e) => `${index.trace.tape[e].op} (entry ${e})`).join(", ") : "empty"],
        ["pending", pending.length ? pending.map(([e, n]) => `entry ${e} waits for ${n}`).join("; ") : "none"],
        ["released", releasedChips(index, item.freed, item.step)],
      ]),
    );
    const rederived = index.rederivedAt.get(stepIndex) ?? [];
    if (rederived.length) {
      body.append(el("p", { class: "checkpoint-note", "data-testid": "rederived" },
        "↻ Recomputed here instead of kept since forward: ", tensorChips(index, rederived.map((t) => t.id)),
        " — re-run from the stored inputs, used by this vjp, then freed."));
    }
    if (index.isCheckpoint(item.entry)) {
      const steps = index.recomputeSteps.get(item.entry) ?? [];
      const region = blocksText(index.regions.get(item.entry));
      body.append(el("p", { class: "checkpoint-note", "data-testid": "checkpoint-backward" },
        `↻ ${item.backward} re-runs ${region || "its region"} with the tape on${steps.length ? ` (recompute ${stepRange(steps)})` : ""}, then backs through what that recorded; the recomputed activations are freed as the inner sweep goes.`));
    }
    const ran = index.regionRunBy(item.entry);
    if (ran) {
      body.append(el("p", { class: "checkpoint-note", "data-testid": "checkpoint-backward" },
        `↻ ${item.backward} was the first to unpack a tensor ${regionText(ran)} did not keep: torch re-ran the region's forward `
        + `(recompute ${stepRange(ran.recomputeSteps)}) and this vjp reads what that saved; the recomputed activations are freed as backward goes.`));
    }
    if (stepIndex === index.backwardEnd && !error) {
      body.append(el("p", { class: "freed-note", text: "Backward is done: the tape has freed what it saved. A second backward would raise \"Trying to backward through the graph a second time\" unless retain_graph=True." }));
    }
  }

  return { render };
}
