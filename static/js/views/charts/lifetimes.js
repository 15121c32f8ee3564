// lifetimes.js — the Plotly lifetime chart: one horizontal bar per saved tensor from born to freed, with a step cursor;
// rows grouped by scope (lifetime-rows.js): the parameters in one "resident" band and each folded group one bar, opened
// by a click on it; every drawn row is named and the chart's frame scrolls. The selection (a tensor, or the op that
// made it) is outlined, its group opened to show it.
import { createChartCursor } from "./cursor.js";
import { formatBytes, formatShape } from "../../lib/format.js";
import { lifetimeRows, lifetimeTree, pathToTensor, RESIDENT } from "../../model/lifetime-rows.js";
import { KIND_COLORS } from "../../lib/palette.js";
import { loadPlotly } from "../../lib/plotly-loader.js";
import { plottedOnScreen } from "./on-screen.js";

const ROW_PX = 16;
const GROUP_COLOR = "#94a3b8";
const OUTLINE_PX = 3;                 // the selected tensor's bar
const OUTLINE_COLOR = "#CC79A7";
const BAR_GAP = 0.25;                 // of a row's height, between bars

/** The outline of the selected tensor's bar: a rectangle over it (Plotly draws a layout shape alone; restyling the bars'
 * borders redrew the whole chart, ~200 ms a selection on grad-accumulation's 143 rows). None for no row. */
function outlineShapes(row) {
  if (!row) return [];
  const half = (1 - BAR_GAP) / 2;
  return [{ type: "rect", xref: "x", yref: "y", x0: row.born - 0.5, x1: row.end + 0.5, y0: row.row - half,
    y1: row.row + half, line: { width: OUTLINE_PX, color: OUTLINE_COLOR }, name: "selected" }];
}

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
  const screen = plottedOnScreen(element);
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

  let tree = null;         // lifetime-rows.js's tensor -> group paths
  let groups = new Map();
  let open = new Set();

  /** groupsView: {groups, pathOf(nodeId)} (the graph's groups, graph-groups.js). */
  async function load(index, groupsView = { groups: new Map(), pathOf: () => [] }) {
    groups = groupsView.groups;
    tree = lifetimeTree(index, groups, groupsView.pathOf);
    open = new Set(tree.defaultOpen);
    shown = { index, rows: [], drawn: false };
    await draw();
  }

  function bind() {
    if (element.dataset.bound) return;
    element.dataset.bound = "1";
    element.on("plotly_click", (event) => {
      const key = event.points[0]?.customdata;
      if (!key) return;
      if (key === RESIDENT || key.startsWith("g:")) toggle(key === RESIDENT ? RESIDENT : key.slice(2));
      else onPick(key, event.points[0]);
    });
    element.on("plotly_afterplot", () => cursor.place());     // every plot from now on places the cursor
    cursor.place();               // the first plot's afterplot came before the listener: at the step shown now
  }

  function toggle(id) {
    if (open.has(id)) open.delete(id);
    else open.add(id);
    draw().then(() => reselect());
  }

  async function draw() {
    const mine = shown;
    const { index } = mine;
    const rows = lifetimeRows(index, groups, tree, open).map((r, row) => ({ ...r, row }));
    const color = (r) => (r.kind === "group" ? GROUP_COLOR : KIND_COLORS[r.kind]);
    const data = [{
      type: "bar", orientation: "h", y: rows.map((r) => r.row), base: rows.map((r) => r.born - 0.5),
      x: rows.map((r) => r.end - r.born + 1),
      marker: { color: rows.map(color), line: { width: 0 } },
      customdata: rows.map((r) => r.key),
      hovertext: rows.map((r) => (r.tensor ? describe(r.tensor, index) : `<b>${r.label}</b><br>click to ${r.open || (r.band && open.has(RESIDENT)) ? "fold" : "open"}`)),
      hovertemplate: "%{hovertext}<extra></extra>",
    }];
    // Every drawn row is named: the chart grows and its frame scrolls (.lifetime-scroll).
    const height = Math.max(160, 40 + rows.length * ROW_PX);
    element.style.height = `${height}px`;
    const frame = element.closest(".chart-wrap");
    if (frame) {       // a frame that scrolls takes the focus, so its arrow keys scroll it without a mouse
      frame.classList.add("lifetime-scroll");
      frame.tabIndex = 0;
      frame.setAttribute("role", "region");
      frame.setAttribute("aria-label", "Saved tensor lifetimes, one row per tensor or module (scrolls)");
    }
    showLegend(rows.filter((r) => r.tensor || r.band).map((r) => ({ tensor: r.tensor ?? { kind: "param" } })));
    const layout = {
      height, margin: { l: 40, r: 12, t: 6, b: 30 }, showlegend: false, bargap: BAR_GAP,
      hovermode: "closest",
      xaxis: { range: [-0.5, index.trace.steps.length - 0.5], title: { text: "step", standoff: 2 }, zeroline: false },
      yaxis: { autorange: "reversed", tickvals: rows.map((r) => r.row),
        ticktext: rows.map((r) => `${"\u2003".repeat(r.depth)}${r.label}`), automargin: true, tickfont: { size: 10 },
        // automargin makes room for every row's name; Plotly's default ("hide past div") measures every label again
        // after placing each one: n² measurements, 0.3 s of each redraw at 143 rows
        ticklabeloverflow: "allow" },
    };
    element.dataset.rows = String(rows.length);
    // the rows, the height and the legend now (the page keeps its length); the bars once on screen (on-screen.js)
    return screen.request(async () => {
      const Plotly = await loadPlotly();
      if (shown !== mine) return;                  // a newer run arrived while Plotly loaded
      const outline = outlinedRow(rows, index);    // drawn with the chart, not laid over it after (a second render)
      await Plotly.react(element, data, { ...layout, shapes: outlineShapes(rows[outline]) },
        { displayModeBar: false, responsive: true });
      bind();
      shown.rows = rows;
      shown.drawn = true;
      outlined = outline;
      element.dataset.selectedTensor = outline === null ? "" : String(tensorOf(wanted, index));
    });
  }

  /** The row of the selected tensor among `rows`, or null. */
  function outlinedRow(rows, index) {
    const tensorId = tensorOf(wanted, index);
    const row = rows.findIndex((r) => r.tensor && r.tensor.id === tensorId);
    return row < 0 ? null : row;
  }

  let wanted = null;   // the selection to outline, kept across redraws

  /** Outline the bar of the selected tensor: "t<id>", or "e<entry>" for the tensor that entry made; a tensor inside
   * a folded group (or the resident band) opens it first. */
  function select(id) {
    wanted = id;
    if (!shown) return;                            // outlined once drawn, with the run's rows
    const tensorId = tensorOf(id);
    const path = tensorId === null ? [] : pathToTensor(shown.index, tree, tensorId).filter((g) => !open.has(g));
    if (path.length) { for (const g of path) open.add(g); draw().then(() => reselect()); return; }
    reselect();
  }

  function tensorOf(id, index = shown.index) {
    if (id?.[0] === "t") return Number(id.slice(1));
    if (id?.[0] === "e") return index.trace.tape[Number(id.slice(1))]?.output ?? null;
    return null;
  }

  function reselect() {
    if (!shown?.drawn) return;
    const next = outlinedRow(shown.rows, shown.index);
    if (next === outlined) return;
    outlined = next;
    element.dataset.selectedTensor = next === null ? "" : String(tensorOf(wanted));
    window.Plotly.relayout(element, { shapes: outlineShapes(shown.rows[next]) });
  }

  return { load, update: (stepIndex) => cursor.move(stepIndex), select };
}
