// ranks.js — a run of many ranks (torch.distributed, one document per rank): the rank selector in the header and the
// chart of every rank's peak by memory kind side by side, the rank on screen marked. Both only ask the workspace to
// show another rank (setRank); every view then follows, as it follows any trace shown. Hidden for a run of one.
import { byteAxis } from "../charts/byte-axis.js";
import { formatBytes } from "../../lib/format.js";
import { KIND_COLORS, MEMORY_KINDS } from "../../lib/palette.js";
import { loadPlotly } from "../../lib/plotly-loader.js";
import * as workspace from "../../state/workspace.js";

const ws = workspace.state;

/** A rank's summary as the run holds it (a summary is no table: version 2 writes it as it is, nothing to decode). */
const summaryOf = (rank) => ws.run.ranks[rank].summary;

/** "rank 1 of 2 · peak 47.2 MiB": an option of the selector. */
const rankWords = (rank) => `rank ${rank} of ${ws.run.ranks.length} · peak ${formatBytes(summaryOf(rank).peak_bytes)}`;

/** select: the <select data-testid=rank-select>, inside the label to show; panel: the chart's section; chart: its
 * Plotly element; note: the line saying the selected rank's peak in sharding's words. */
export function createRanksView({ field, select, panel, chart, note }) {
  let drawn = null;     // the run the chart was drawn for

  select.addEventListener("change", () => workspace.setRank(Number(select.value)));

  function fillSelector() {
    select.replaceChildren(...ws.run.ranks.map((_, rank) => {
      const option = document.createElement("option");
      option.value = String(rank);
      option.textContent = rankWords(rank);
      return option;
    }));
  }

  /** One bar per rank, stacked by kind (the kinds at that rank's peak sum to its peak_bytes); the shown rank outlined. */
  function chartData() {
    const ranks = ws.run.ranks.map((_, rank) => rank);
    const x = ranks.map((rank) => `rank ${rank}`);
    const outline = ranks.map((rank) => (rank === ws.rank ? 3 : 0));
    return MEMORY_KINDS.map((kind) => ({
      type: "bar", name: kind, x, customdata: ranks,
      y: ranks.map((rank) => summaryOf(rank).by_kind_at_peak[kind] || 0),
      text: ranks.map((rank) => `step ${summaryOf(rank).peak_step}${summaryOf(rank).peak ? ` (${summaryOf(rank).peak.phase})` : ""}`),
      textposition: "none",
      marker: { color: KIND_COLORS[kind], line: { color: "#111", width: outline } },
      hovertemplate: `%{x}: ${kind} %{y:,} B at its peak, %{text}<extra></extra>`,
    }));
  }

  function chartLayout() {
    const peaks = ws.run.ranks.map((_, rank) => summaryOf(rank).peak_bytes);
    return {
      barmode: "stack", bargap: 0.35, height: chart.clientHeight || 220, margin: { l: 56, r: 8, t: 22, b: 30 },
      showlegend: true, legend: { x: 1.01, y: 1, font: { size: 11 }, traceorder: "reversed" },
      yaxis: byteAxis(Math.max(...peaks) * 1.12, { title: { text: "bytes at the rank's peak" } }),
      xaxis: { type: "category", fixedrange: true },
      annotations: peaks.map((peak, rank) => ({
        x: `rank ${rank}`, y: peak, yanchor: "bottom", showarrow: false, font: { size: 11 },
        text: rank === ws.rank ? `<b>▼ shown · ${formatBytes(peak)}</b>` : formatBytes(peak),
      })),
    };
  }

  async function draw() {
    const run = ws.run;
    const Plotly = await loadPlotly();
    if (ws.run !== run || panel.hidden) return;
    await Plotly.react(chart, chartData(), chartLayout(), { displayModeBar: false, responsive: true });
    chart.dataset.rank = String(ws.rank);
    if (!chart.dataset.bound) {
      chart.dataset.bound = "1";
      chart.on("plotly_click", (event) => {
        const rank = event.points[0]?.customdata;
        if (Number.isInteger(rank)) workspace.setRank(rank);
      });
    }
    drawn = run;
  }

  /** The run on screen now: shown when it has ranks, its rank selected and marked. */
  function show() {
    const many = Boolean(ws.run);
    field.hidden = !many;
    panel.hidden = !many;
    if (!many) return;
    if (drawn !== ws.run || select.options.length !== ws.run.ranks.length) fillSelector();
    select.value = String(ws.rank);
    const sharding = summaryOf(ws.rank).peak_sharding;
    note.textContent = `${ws.run.ranks.length} ranks (world size ${ws.run.world_size}); the page shows rank ${ws.rank}`
      + (sharding ? `. ${sharding[0].toUpperCase()}${sharding.slice(1)}.` : ".");
    draw();
  }

  workspace.subscribe((kind) => { if (kind === "rank" || kind === "trace") show(); });
  return { show };
}
