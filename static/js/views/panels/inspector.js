// inspector.js — the selected node or tensor: shape, dtype, bytes, address, saved-by, lifetime, state at the cursor, values.
// Checkpoint entries show their region and RNG handling; recompute entries the checkpoint that re-ran them. Under the
// "manual" policy a button toggles the selection's output in the recompute set, greyed out with the reason when it cannot.
import { el, facts, setText } from "../../lib/dom.js";
import { exactBytes, formatBytes, formatCount, formatNumber, formatShape } from "../../lib/format.js";
import { asRows, decodeHalfs } from "../../lib/half.js";
import { loadPlotly } from "../../lib/plotly-loader.js";
import { isAlive } from "../../model/live-bytes.js";
import { recomputeChoice } from "../../model/recompute-pick.js";
import { blocksText, recomputedForText, regionText } from "../../model/trace-index.js";
import { underflowBlock } from "./underflow.js";
import { collectiveBlock, isCollective } from "./collective.js";

/** Who made a tensor: its tape entry, an op inside a checkpoint (no entry), a checkpoint's detached input, or a leaf. */
function producerOf(tensor, index) {
  const tape = index.trace.tape;
  if (tensor.produced_by !== null) {
    const entry = tape[tensor.produced_by];
    return `${entry.op} (entry ${tensor.produced_by}${entry.phase === "recompute" ? ", recomputed" : ""})`;
  }
  const born = index.trace.steps[tensor.born];
  if (born && born.recorded === false && born.entry === null && born.autocast) {
    return `autocast's cast to ${born.autocast} of an input that needs no gradient, not on the tape`;
  }
  if (born && born.recorded === false && born.entry === null) return `${born.op ?? "an op"} that nothing needs a gradient through (no_grad, or before the first parameter that needs grad), not on the tape`;
  if (born && born.recorded === false) return `${born.op ?? "an op"} inside checkpoint entry ${born.entry}, not on the tape`;
  if ((tensor.kind === "activation" || tensor.kind === "input") && born && born.phase !== "forward") {
    return "a checkpoint's saved input, detached for its recompute";
  }
  return `${tensor.kind} (a leaf)`;
}

function tensorState(tensor, index, step) {
  if (!isAlive(tensor, step)) return tensor.born > step ? "not yet allocated" : `freed at step ${tensor.freed}`;
  if (index.held(tensor, step)) return "alive, held by the tape for backward";
  const released = index.releasedAt.get(tensor.id);
  if (released !== undefined && step >= released) return `alive, released by backward at step ${released}`;
  return "alive";
}

const stepTerm = (step) => `at step ${step}`;

function tensorFacts(tensor, index, step) {
  const tape = index.trace.tape;
  const savedBy = tensor.saved_by.length
    ? tensor.saved_by.map((entry) => `${tape[entry].op} (entry ${entry})`).join(", ") : "nothing saves it";
  const producer = producerOf(tensor, index);
  const stats = tensor.value ? `min ${formatNumber(tensor.value.min)} · max ${formatNumber(tensor.value.max)} · mean ${formatNumber(tensor.value.mean)} · norm ${formatNumber(tensor.value.norm)}` : "—";
  return facts([
    ["tensor", `${tensor.name} (id ${tensor.id}, ${tensor.kind})`],
    ["shape", `${formatShape(tensor.shape)} · ${tensor.dtype}`],
    ["bytes", exactBytes(tensor.nbytes)],
    ["address", `${tensor.address} · storage ${tensor.storage}`],
    ["made by", producer],
    ["saved by", savedBy],
    ...recomputeFacts(tensor, index),
    ["lifetime", `born step ${tensor.born} → ${tensor.freed === null ? "end" : `freed step ${tensor.freed}`}`],
    [stepTerm(step), tensorState(tensor, index, step)],
    ["values", stats],
  ]);
}

/** Op-level recomputation: a tensor kept as a recipe, or the recomputed copy of one. */
function recomputeFacts(tensor, index) {
  const tape = index.trace.tape;
  if (tensor.recompute_of !== undefined && tensor.recompute_of !== null) {
    return [["recompute", `a recomputed copy of ${index.nameOf(tensor.recompute_of)} (id ${tensor.recompute_of}), made in backward`]];
  }
  if (tensor.recomputed_by?.length) {
    const by = tensor.recomputed_by.map((entry) => `${tape[entry].op} (entry ${entry})`).join(", ");
    const dropped = tensor.dropped !== undefined ? `, dropped at step ${tensor.dropped}` : "";
    return [["recompute", `kept as a recipe by ${by}${dropped}: re-derived in backward`]];
  }
  return [];
}

/** Extra rows for checkpoint and recompute entries. */
function entryPhase(entry, index) {
  if (entry.phase === "recompute") {
    const owner = recomputedForText(index, entry.index);
    const at = index.recordedAt.get(entry.index);
    return [["phase", `recompute: re-run in backward${owner ? ` for ${owner}` : ""}${at !== undefined ? ` at step ${at}` : ""}`]];
  }
  const inRegion = index.regionOf.get(entry.index);
  if (inRegion) {
    const steps = inRegion.recomputeSteps;
    return [["checkpoint", `inside ${regionText(inRegion)}: keeps nothing for backward${steps.length ? `; re-run at steps ${steps[0]}–${steps.at(-1)}` : ""}`]];
  }
  if (entry.op !== "checkpoint") return [];
  const region = index.regions.get(entry.index);
  const recomputes = index.recomputeSteps.get(entry.index) ?? [];
  const rng = entry.attrs?.preserve_rng_state === false ? "not preserved: dropout draws new masks on recompute" : "preserved: the recompute replays the same random draws";
  return [
    ["region", `${blocksText(region) || "a region"}${region?.path ? ` from ${region.path}` : ""}`],
    ["recompute", recomputes.length ? `${recomputes.length} steps in its backward` : "none yet"],
    ["RNG state", rng],
  ];
}

/** The manual-set toggle for a selection; `picked` is the set of tensor ids being recomputed. */
function recomputeToggle(selection, index, picked, onToggle) {
  const choice = recomputeChoice(selection, index);
  if (!choice) return null;
  const on = choice.ok && picked.has(choice.tensor);
  const button = el("button", { type: "button", class: "toggle-recompute", "data-testid": "toggle-recompute",
    "aria-pressed": String(on), disabled: !choice.ok, title: choice.ok ? choice.label : choice.reason,
    text: on ? "Save this again (stop recomputing it)" : "Recompute this instead of saving it" });
  button.addEventListener("click", () => onToggle(selection));
  const why = choice.ok ? null : el("p", { class: "hint recompute-reason", "data-testid": "recompute-reason", text: `Cannot: ${choice.reason}.` });
  if (why) button.setAttribute("aria-describedby", "recompute-reason");
  if (why) why.id = "recompute-reason";
  return el("div", { class: "recompute-toggle" }, button, why);
}

export function createInspector(element, { manual = () => null, onToggle = () => {} } = {}) {
  const body = element.querySelector(".inspector-body");
  const heatmap = element.querySelector(".inspector-heatmap");
  let shown = null; // the tensor whose values are drawn

  function tensorFor(selection, index) {
    if (!selection) return null;
    const number = Number(selection.slice(1));
    if (selection[0] === "t") return index.tensor(number) || null;
    const entry = index.trace.tape[number];
    return entry ? index.tensor(entry.output) : null;
  }

  function drawValues(tensor) {
    if (shown === tensor) return;
    shown = tensor;
    if (!tensor || !tensor.value || !tensor.value.f16) {
      // Hidden, not purged: purging while Plotly's deferred auto-margin redraw is pending throws inside Plotly.
      heatmap.hidden = true;
      return;
    }
    heatmap.hidden = false;
    const z = asRows(decodeHalfs(tensor.value.f16), tensor.shape);
    const data = [{ type: "heatmap", z, colorscale: "RdBu", reversescale: true, zmid: 0,
      hovertemplate: "row %{y}, col %{x}: %{z:.4g}<extra></extra>", colorbar: { thickness: 10 } }];
    const layout = { height: 180, margin: { l: 30, r: 10, t: 4, b: 24 }, yaxis: { autorange: "reversed" } };
    loadPlotly().then((Plotly) => { if (shown === tensor) Plotly.react(heatmap, data, layout, { displayModeBar: false, responsive: true }); });
  }

  // What render() last drew, so that a step alone (the player, a scrub) refreshes only the row that depends on it.
  let drawn = null;     // { selection, index, tensor, row: the "at step" <dt>, or null }

  /** The cursor moved: the same selection on the same trace changes only its "at step" row; anything else renders. */
  function showStep(selection, index, step) {
    if (!drawn || drawn.selection !== selection || drawn.index !== index) { render(selection, index, step); return; }
    if (!drawn.row) return;
    setText(drawn.row, stepTerm(step));
    setText(drawn.row.nextElementSibling, tensorState(drawn.tensor, index, step));
  }

  function render(selection, index, step) {
    drawn = { selection, index, tensor: null, row: null };
    body.replaceChildren();
    if (!selection || !index) {
      body.append(el("p", { class: "hint", text: "Click a node or a lifetime bar to inspect it." }));
      drawValues(null);
      return;
    }
    const tensor = tensorFor(selection, index);
    const picked = manual();
    if (picked) {
      const toggle = recomputeToggle(selection, index, picked, onToggle);
      if (toggle) body.append(toggle);
    }
    if (selection[0] === "e") {
      const entry = index.trace.tape[Number(selection.slice(1))];
      if (entry) {
        body.append(facts([
          ["entry", `${entry.index} · ${entry.op}${entry.backward ? ` → ${entry.backward}` : " (no backward node of its own)"}`],
          ...entryPhase(entry, index),
          ["scope", entry.scope || "—"],
          ["flops", formatCount(entry.flops) + flopsSource(entry)],
          ["saves", entry.saved.length ? entry.saved.map((id) => index.nameOf(id)).join(", ") : "nothing"],
          ...(entry.recomputes?.length ? [["recipes", `${[...new Set(entry.recomputes)].map((id) => index.nameOf(id)).join(", ")}: recomputed in backward, not saved`]] : []),
          ...(index.isRecipe(entry.index) ? [["re-run", "in backward, to re-derive its output for a consumer that kept only a recipe"]] : []),
          ["why", entry.why],
        ]));
        if (isCollective(entry)) body.append(el("h3", { text: "What it moves" }), collectiveBlock(index, entry));
        body.append(el("h3", { text: "Output" }));
      }
    }
    if (tensor) {
      const list = tensorFacts(tensor, index, step);
      body.append(list);
      drawn.tensor = tensor;
      drawn.row = [...list.querySelectorAll(":scope > dt")].find((dt) => dt.textContent === stepTerm(step)) ?? null;
    }
    const underflow = underflowBlock(tensor, index.trace);
    if (underflow) body.append(underflow);
    drawValues(tensor);
  }

  return { render, showStep };
}

// An imported entry says whose count its FLOPs are; our engine's entries (no flops_source) are our registry's.
const FLOPS_SOURCES = { torch: "torch's FlopCounterMode formula", tapescope: "Tapescope's estimate: torch has no formula for this op" };

function flopsSource(entry) {
  return entry.flops_source ? ` (${FLOPS_SOURCES[entry.flops_source] || entry.flops_source})` : "";
}
