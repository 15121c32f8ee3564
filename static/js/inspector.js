// inspector.js — the selected node or tensor: shape, dtype, bytes, address, saved-by, lifetime, state at the cursor, values.
/* global Plotly */
import { el, facts } from "./dom.js";
import { formatBytes, formatNumber, formatShape } from "./format.js";
import { asRows, decodeHalfs } from "./half.js";

function tensorState(tensor, index, step) {
  if (tensor.born > step) return "not yet allocated";
  if (tensor.freed !== null && step > tensor.freed) return `freed at step ${tensor.freed}`;
  if (index.held(tensor, step)) return "alive, held by the tape for backward";
  const released = index.releasedAt.get(tensor.id);
  if (released !== undefined && step >= released) return `alive, released by backward at step ${released}`;
  return "alive";
}

function tensorFacts(tensor, index, step) {
  const tape = index.trace.tape;
  const savedBy = tensor.saved_by.length
    ? tensor.saved_by.map((entry) => `${tape[entry].op} (entry ${entry})`).join(", ") : "nothing saves it";
  const producer = tensor.produced_by === null ? `${tensor.kind} (a leaf)` : `${tape[tensor.produced_by].op} (entry ${tensor.produced_by})`;
  const stats = tensor.value ? `min ${formatNumber(tensor.value.min)} · max ${formatNumber(tensor.value.max)} · mean ${formatNumber(tensor.value.mean)} · norm ${formatNumber(tensor.value.norm)}` : "—";
  return facts([
    ["tensor", `${tensor.name} (id ${tensor.id}, ${tensor.kind})`],
    ["shape", `${formatShape(tensor.shape)} · ${tensor.dtype}`],
    ["bytes", `${formatBytes(tensor.nbytes)} (${tensor.nbytes.toLocaleString("en")} B)`],
    ["address", `${tensor.address} · storage ${tensor.storage}`],
    ["made by", producer],
    ["saved by", savedBy],
    ["lifetime", `born step ${tensor.born} → ${tensor.freed === null ? "end" : `freed step ${tensor.freed}`}`],
    [`at step ${step}`, tensorState(tensor, index, step)],
    ["values", stats],
  ]);
}

export function createInspector(element) {
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
      Plotly.purge(heatmap);
      heatmap.hidden = true;
      return;
    }
    heatmap.hidden = false;
    const z = asRows(decodeHalfs(tensor.value.f16), tensor.shape);
    Plotly.react(heatmap, [{ type: "heatmap", z, colorscale: "RdBu", reversescale: true, zmid: 0,
      hovertemplate: "row %{y}, col %{x}: %{z:.4g}<extra></extra>", colorbar: { thickness: 10 } }],
    { height: 180, margin: { l: 30, r: 10, t: 4, b: 24 }, yaxis: { autorange: "reversed" } },
    { displayModeBar: false, responsive: true });
  }

  function render(selection, index, step) {
    body.replaceChildren();
    if (!selection || !index) {
      body.append(el("p", { class: "hint", text: "Click a node or a lifetime bar to inspect it." }));
      drawValues(null);
      return;
    }
    const tensor = tensorFor(selection, index);
    if (selection[0] === "e") {
      const entry = index.trace.tape[Number(selection.slice(1))];
      if (entry) {
        body.append(facts([
          ["entry", `${entry.index} · ${entry.op} → ${entry.backward}`],
          ["scope", entry.scope ?? "—"],
          ["flops", entry.flops.toLocaleString("en")],
          ["saves", entry.saved.length ? entry.saved.map((id) => index.tensor(id).name).join(", ") : "nothing"],
          ["why", entry.why],
        ]));
        body.append(el("h3", { text: "Output" }));
      }
    }
    if (tensor) body.append(tensorFacts(tensor, index, step));
    drawValues(tensor);
  }

  return { render };
}
