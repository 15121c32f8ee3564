// lifetimes.js — the Plotly lifetime chart: one horizontal bar per saved tensor from born to freed, with a step cursor;
// the selection (a tensor, or the op that made it) is outlined.
/* global Plotly */
import { createChartCursor } from "./chart-cursor.js";
import { formatBytes, formatShape } from "./format.js";
import { KIND_COLORS } from "./palette.js";

const ROW_PX = 16;
const MAX_NAMED_ROWS = 300;   // past this a named row each is a chart too tall for Plotly to draw quickly: bars only

function describe(tensor, index) {
  const trace = index.trace;
  const savers = tensor.saved_by.map((entry) => `${trace.tape[entry].op} (entry ${entry})`).join(", ");
  const released = index.releasedAt.get(tensor.id);
  const releaser = released !== undefined ? index.sweepByStep.get(released) : null;
  const freed = tensor.freed === null ? "alive at the end" : `freed at step ${tensor.freed}`;
  const release = releaser ? `released by ${releaser.backward} at step ${released}` : "never released by backward";
  return `<b>${tensor.name}</b> ${formatShape(tensor.shape)} · ${formatBytes(tensor.nbytes)}<br>`
    + `saved by ${savers}<br>${release}; ${freed}`;
}

export function createLifetimeChart(element, { onPick }) {
  const cursor = createChartCursor(element);
  let shown = null;        // {rows, index}
  let outlined = null;     // the selected tensor's row, or null

  /** What the bar colours mean: the kinds of tensor in this chart. */
  function showLegend(rows) {
    const wrap = element.closest(".chart-wrap");
    let legend = wrap?.previousElementSibling?.matches?.(".lifetime-legend") ? wrap.previousElementSibling : null;
    if (!legend && wrap) {
      legend = document.createElement("ul");
      legend.className = "legend lifetime-legend";
      legend.dataset.testid = "lifetime-legend";
      legend.setAttribute("aria-label", "Lifetime colours");
      wrap.before(legend);
    }
    if (!legend) return;
    const kinds = [...new Set(rows.map((r) => r.tensor.kind))];
    legend.replaceChildren(...kinds.map((kind) => {
      const item = document.createElement("li");
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = KIND_COLORS[kind];
      item.append(swatch, kind === "param" ? "parameter (resident)" : kind);
      return item;
    }));
  }

  async function load(index) {
    const { trace, savedTensors, lastStep } = index;
    const rows = savedTensors.map((tensor, row) => {
      const end = tensor.freed === null ? lastStep : tensor.freed;
      return { tensor, row, born: tensor.born, length: end - tensor.born + 1 };
    });
    const data = [{
      type: "bar", orientation: "h", y: rows.map((r) => r.row), base: rows.map((r) => r.born - 0.5),
      x: rows.map((r) => r.length), marker: { color: rows.map((r) => KIND_COLORS[r.tensor.kind]) },
      customdata: rows.map((r) => r.tensor.id),
      hovertext: rows.map((r) => describe(r.tensor, index)), hovertemplate: "%{hovertext}<extra></extra>",
    }];
    // Every row named: the chart grows and its frame scrolls (.lifetime-scroll), up to MAX_NAMED_ROWS rows.
    const labelled = rows.length <= MAX_NAMED_ROWS;
    const height = labelled ? Math.max(160, 40 + rows.length * ROW_PX) : 420;
    element.style.height = `${height}px`;
    element.closest(".chart-wrap")?.classList.add("lifetime-scroll");
    showLegend(rows);
    const layout = {
      height, margin: { l: 40, r: 12, t: 6, b: 30 }, showlegend: false, bargap: 0.25,
      hovermode: "closest",
      xaxis: { range: [-0.5, trace.steps.length - 0.5], title: { text: "step", standoff: 2 }, zeroline: false },
      yaxis: { autorange: "reversed", tickvals: labelled ? rows.map((r) => r.row) : undefined,
        ticktext: labelled ? rows.map((r) => r.tensor.name) : undefined, showticklabels: labelled,
        automargin: true, tickfont: { size: 10 } },
    };
    await Plotly.react(element, data, layout, { displayModeBar: false, responsive: true });
    shown = { rows, index };
    outlined = undefined;
    if (!element.dataset.bound) {
      element.dataset.bound = "1";
      element.on("plotly_click", (event) => {
        if (event.points.length) onPick(`t${event.points[0].customdata}`, event.points[0]);
      });
      element.on("plotly_afterplot", () => cursor.place());
    }
  }

  /** Outline the bar of the selected tensor: "t<id>", or "e<entry>" for the tensor that entry made. */
  function select(id) {
    if (!shown) return;
    let tensorId = null;
    if (id?.[0] === "t") tensorId = Number(id.slice(1));
    else if (id?.[0] === "e") tensorId = shown.index.trace.tape[Number(id.slice(1))]?.output ?? null;
    const row = shown.rows.findIndex((r) => r.tensor.id === tensorId);
    const next = row < 0 ? null : row;
    if (next === outlined) return;
    outlined = next;
    element.dataset.selectedTensor = next === null ? "" : String(tensorId);
    Plotly.restyle(element, {
      "marker.line.width": [shown.rows.map((r) => (r.row === next ? 3 : 0))],
      "marker.line.color": "#CC79A7",
    }, [0]);
  }

  return { load, update: (stepIndex) => cursor.move(stepIndex), select };
}
