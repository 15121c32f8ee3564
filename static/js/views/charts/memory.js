// memory.js — the Plotly memory timeline: live bytes stacked by kind, the peak marked, a step cursor, a ghost of the run it
// is compared with (the previous run, or the pinned baseline).
// Bytes on the y axis are binary (KiB, MiB) like the header; forward, backward-2 and recompute steps are shaded; a
// double backward adds a dotted line of the bytes its first backward saved for the second; a run imported with
// --allocator, a line of the bytes PyTorch's CUDA caching allocator reserves over them, its peak named.
import { byteAxis } from "./byte-axis.js";
import { createChartCursor } from "./cursor.js";
import { formatBytes } from "../../lib/format.js";
import { allocatorFigures, RESERVED_NAME, reservedSeries } from "../../model/allocator.js";
import { KIND_COLORS, MEMORY_KINDS } from "../../lib/palette.js";
import { loadPlotly } from "../../lib/plotly-loader.js";
import { plottedOnScreen } from "./on-screen.js";

export function createMemoryChart(element, { onPick }) {
  const cursor = createChartCursor(element);
  const screen = plottedOnScreen(element);
  let trace = null;

  /** One stacked band per memory kind; a kind this run never holds stays in the stack (at zero) but out of the
   * legend and the hover, so the legend names only what is drawn (ten kinds pushed the biggest band's out of view). */
  function kindSeries(doc) {
    const x = doc.steps.map((s) => s.index);
    return MEMORY_KINDS.map((kind) => {
      const y = doc.steps.map((s) => s.by_kind[kind] || 0);
      const held = y.some((bytes) => bytes > 0);
      return {
        type: "scatter", mode: "lines", stackgroup: "memory", name: kind, x, y, showlegend: held,
        line: { width: 0.5, color: KIND_COLORS[kind] }, fillcolor: `${KIND_COLORS[kind]}cc`,
        ...(held ? { hovertemplate: `${kind}: %{y:,} B<extra></extra>` } : { hoverinfo: "skip" }),
      };
    });
  }

  /** Double backward: the bytes the first backward's recorded ops saved for backward-2, a line over the stack. */
  function savedForSecondSeries(doc) {
    if (!doc.summary.recorded_backward) return [];
    return [{
      type: "scatter", mode: "lines", name: "saved for backward-2", x: doc.steps.map((s) => s.index),
      y: doc.steps.map((s) => s.recorded_backward_bytes ?? 0), line: { color: "#7c3aed", width: 2, dash: "dot" },
      hovertemplate: "the first backward's intermediates, saved for the second: %{y:,} B<extra></extra>",
    }];
  }

  /** --allocator: what the caching allocator holds from the GPU at each step, a line over the live bytes. */
  function reservedLine(doc) {
    const reserved = reservedSeries(doc);
    if (!reserved || !allocatorFigures(doc)) return [];
    return [{
      type: "scatter", mode: "lines", name: RESERVED_NAME, x: doc.steps.map((s) => s.index), y: reserved,
      line: { color: "#000", width: 2, dash: "dashdot" },    // not comm_buffer's solid black, nor a ghost's dash
      hovertemplate: "reserved by the CUDA caching allocator: %{y:,} B<extra></extra>",
    }];
  }

  function reservedPeakLabel(doc) {
    const figures = allocatorFigures(doc);
    return [{ x: figures.reservedPeakStep, y: figures.reservedPeakBytes, name: "reserved-peak",
      text: `reserved peak ${formatBytes(figures.reservedPeakBytes)}`, showarrow: true, arrowhead: 2,
      ax: figures.reservedPeakStep > doc.steps.length / 2 ? -64 : 64, ay: -16, font: { size: 11 }, bgcolor: "#fff" }];
  }

  function ghostSeries(previous, name) {
    return {
      type: "scatter", mode: "lines", name, x: previous.steps.map((s) => s.index),
      y: previous.steps.map((s) => s.live_bytes), line: { dash: "dash", color: name === "baseline" ? "#9a3412" : "#222", width: 1.5 },
      hovertemplate: `${name}: %{y:,} B<extra></extra>`,
    };
  }

  const LABEL_GAP = 0.12;      // labels closer than this share of the step axis take turns on two rows
  const band = (x0, x1, color, opacity) => ({ type: "rect", xref: "x", yref: "paper", x0: x0 - 0.5, x1: x1 + 0.5,
    y0: 0, y1: 1, fillcolor: color, opacity, line: { width: 0 }, layer: "below" });

  /** Runs of consecutive steps whose phase passes `test` (and, with micro-batches, of one micro-batch): [first, last, step]. */
  function runsOf(doc, test) {
    const runs = [];
    doc.steps.forEach((step, i) => {
      const last = runs[runs.length - 1];
      if (!test(step)) return;
      if (last && last[1] === i - 1 && last[2].micro_batch === step.micro_batch) last[1] = i;
      else runs.push([i, i, step]);
    });
    return runs;
  }

  /** Each forward pass (one per micro-batch under accumulate), backward-2 (a double backward's second sweep), and
   * each run of recompute steps (a checkpoint re-running its region). */
  function phaseBands(doc) {
    const forwards = runsOf(doc, (step) => step.phase === "forward");
    const bands = forwards.map(([first, last]) => band(first, last, "#0072B2", 0.05));
    for (const [first, last] of runsOf(doc, (step) => step.phase === "backward-2")) bands.push(band(first, last, "#7c3aed", 0.06));
    for (const [first, last] of runsOf(doc, (step) => step.phase === "recompute")) bands.push(band(first, last, "#CC79A7", 0.22));
    return bands;
  }

  /** "forward 1" … "forward N" over the micro-batches' forward passes: the humps of an accumulated step. Forwards
   * that run back to back (a pipeline's first stage runs several before its first backward) take turns on two
   * rows, so their labels do not run into each other. */
  function microBatchLabels(doc) {
    if (!(doc.summary.micro_batches > 1)) return [];
    const near = doc.steps.length * LABEL_GAP;
    let previousX = -Infinity;
    let raised = false;
    // a pipeline's steps before its first micro-batch (the batch split into micro-batches) are no micro-batch's
    return runsOf(doc, (step) => step.phase === "forward" && step.micro_batch != null).map(([first, last, step]) => {
      const x = (first + last) / 2;
      raised = x - previousX < near ? !raised : false;
      previousX = x;
      return { x, y: 1, xref: "x", yref: "paper", yanchor: "bottom", showarrow: false, yshift: raised ? 11 : 0,
        text: `forward ${step.micro_batch}`, font: { size: 10, color: "#0072B2" }, name: "micro-batch" };
    });
  }

  /** previous: the run to ghost (the pinned baseline when ghostName is "baseline", else the run before). Plotted
   * once on screen (on-screen.js). */
  async function load(doc, previous, ghostName = "previous run") {
    trace = doc;
    const { peak_bytes: peak, peak_step: peakStep } = doc.summary;
    const reserved = reservedLine(doc);
    const data = kindSeries(doc).concat(savedForSecondSeries(doc), reserved);
    const reservedPeak = reserved.length ? doc.summary.reserved_peak_bytes : 0;
    if (previous) data.push(ghostSeries(previous, ghostName));
    const layout = {
      margin: { l: 56, r: 8, t: 22, b: 34 }, height: element.clientHeight || 220,
      showlegend: true, legend: { x: 1.01, y: 1, font: { size: 11 }, traceorder: "reversed" },
      hovermode: "x unified",
      xaxis: { title: { text: "step", standoff: 4 }, range: [-0.5, doc.steps.length - 0.5], zeroline: false },
      yaxis: byteAxis(Math.max(peak, reservedPeak, previous?.summary.peak_bytes ?? 0),
        { title: { text: reservedPeak ? "bytes" : "live bytes" } }),
      shapes: phaseBands(doc),
      annotations: [{ x: peakStep, y: peak, text: `${reservedPeak ? "live peak" : "peak"} ${formatBytes(peak)}`, showarrow: true,
        arrowhead: 2, ax: -56, ay: -14, font: { size: 11 }, bgcolor: "#fff" }, ...(reserved.length ? reservedPeakLabel(doc) : []), ...microBatchLabels(doc)],
    };
    return screen.request(async () => {
      const Plotly = await loadPlotly();
      if (trace !== doc) return;                   // a newer run arrived while Plotly loaded
      await Plotly.react(element, data, layout, { displayModeBar: false, responsive: true });
      if (!element.dataset.bound) {
        element.dataset.bound = "1";
        element.on("plotly_click", (event) => { if (event.points.length) onPick(Math.round(event.points[0].x)); });
        element.on("plotly_afterplot", () => cursor.place());     // every plot from now on places the cursor
        cursor.place();           // this first one's afterplot came before the listener: at the step shown now
      }
    });
  }

  function update(stepIndex) {
    if (!trace) return;
    const step = trace.steps[stepIndex];
    cursor.element.dataset.step = String(stepIndex);
    cursor.element.dataset.bytes = String(step.live_bytes);
    cursor.move(stepIndex);
  }

  return { load, update, cursor: cursor.element };
}
