// sweep.js — the backward panel: the vjp at the cursor, the saved tensors it reads and why, contributions, +=, ready queue, frees.
import { el, facts } from "./dom.js";
import { formatBytes, formatShape } from "./format.js";

const name = (index, id) => index.tensor(id)?.name ?? `tensor ${id}`;
/** Gradients often share a name (x*x makes two "dx"), so the sweep writes each with its tensor id. */
const gradName = (index, id) => `${name(index, id)}#${id}`;

function tensorChips(index, ids, chipClass = "chip") {
  if (!ids.length) return el("span", { class: "none", text: "none" });
  return el("span", {}, ids.map((id) => {
    const tensor = index.tensor(id);
    return el("span", { class: chipClass, text: `${tensor.name} ${formatShape(tensor.shape)} · ${formatBytes(tensor.nbytes)}` });
  }));
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

function forwardSummary(index, step) {
  const entry = index.trace.tape[step.entry];
  if (!entry) return el("p", { class: "hint", text: "Step to the backward pass to see the adjoint sweep." });
  return el("div", {},
    el("p", {}, `Recording ${entry.op}: it saves `, tensorChips(index, entry.saved), "."),
    el("p", { class: "why", text: entry.why }),
    el("p", { class: "hint", text: "The sweep runs these entries in reverse once the forward pass ends." }));
}

export function createSweepPanel(element) {
  const body = element.querySelector(".sweep-body");

  function render(index, stepIndex) {
    body.replaceChildren();
    if (!index) return;
    const step = index.trace.steps[stepIndex];
    const item = index.sweepByStep.get(stepIndex);
    if (!item) {
      if (step.phase === "optimizer") {
        body.append(el("p", {}, `Optimizer step${step.param !== undefined ? ` on ${typeof step.param === "number" ? name(index, step.param) : step.param}` : ""}: backward has finished and freed every saved tensor — a second backward would raise "Trying to backward through the graph a second time".`));
      } else body.append(forwardSummary(index, step));
      return;
    }
    const adjoint = item.adjoint;
    const pending = Object.entries(item.pending);
    body.append(
      facts([
        ["vjp", `${item.backward} (entry ${item.entry}, ${item.op})`],
        ["adjoint", `${name(index, adjoint.tensor)} ${formatShape(adjoint.shape)} · norm ${adjoint.norm.toPrecision(4)}`],
        ["reads", tensorChips(index, item.reads)],
        ["why", el("span", { class: "why", text: item.why })],
      ]),
      el("h3", { text: "Contributions" }),
      el("ul", { class: "contributions" }, item.contributions.map((c) =>
        el("li", { "data-testid": "contribution", "data-to": c.to },
          `→ ${name(index, c.to)}: ${gradName(index, c.grad)} ${formatShape(c.shape)}`))),
      el("h3", { text: "Accumulation" }),
      item.accumulations.length ? el("ul", { class: "accumulations" }, item.accumulations.map((a) => accumulation(index, a)))
        : el("p", { class: "none", text: "nothing accumulates here" }),
      facts([
        ["ready queue", item.ready.length ? item.ready.map((e) => `${index.trace.tape[e].op} (entry ${e})`).join(", ") : "empty"],
        ["pending", pending.length ? pending.map(([e, n]) => `entry ${e} waits for ${n}`).join("; ") : "none"],
        ["freed", tensorChips(index, item.freed, "chip freed-chip")],
      ]),
    );
    if (stepIndex === index.backwardEnd) {
      body.append(el("p", { class: "freed-note", text: "Backward is done: the tape has freed what it saved. A second backward would raise \"Trying to backward through the graph a second time\" unless retain_graph=True." }));
    }
  }

  return { render };
}
