// pareto.js — the checkpoint schedules panel: a Plotly scatter of peak bytes against recompute (percent of forward
// FLOPs, on a log axis so 0.4% and 100% are both readable; schedules without recompute sit at its "0" tick), one
// marker per executed schedule (the current one ringed), the planner's Pareto frontier as a line, and the same
// schedules as a table of buttons for the keyboard, where one that raises the peak says why. Picking a schedule
// calls onPick(schedule); the page re-traces.
import { byteAxis } from "./byte-axis.js";
import { el } from "../../lib/dom.js";
import { formatBytes } from "../../lib/format.js";
import { loadPlotly } from "../../lib/plotly-loader.js";
import { plottedOnScreen } from "./on-screen.js";
import { optimalLabel, overheadText, percentText, sameSchedule, scheduleLabel } from "../../model/schedule.js";

const POLICY_COLORS = {
  none: "#999999", every_k: "#0072B2", sqrt: "#E69F00", selective: "#009E73", optimal: "#CC79A7", manual: "#D55E00",
};

/** Schedules at the same point share one label (every_k k=2 and sqrt often coincide); the others stay unlabelled. */
function pointLabels(schedules) {
  const labels = schedules.map(() => "");
  const first = new Map();
  schedules.forEach((s, i) => {
    const key = `${s.overhead.toFixed(6)}|${s.executed_peak_bytes}`;
    if (first.has(key)) labels[first.get(key)] += ` · ${scheduleLabel(s)}`;
    else { first.set(key, i); labels[i] = scheduleLabel(s); }
  });
  return labels;
}

/** Where each label goes: below when another labelled point sits just above (within about a label's height on
 * the axes' ranges, `xSpan` and `ySpan`), and inward at the x edges. */
function labelPositions(xs, ys, labels, xSpan, ySpan) {
  const minX = Math.min(...xs);
  const maxX = Math.max(...xs);
  return xs.map((x, i) => {
    const crowded = xs.some((x2, j) => j !== i && labels[j] && Math.abs(x2 - x) < 0.08 * xSpan
      && ys[j] > ys[i] && ys[j] - ys[i] < 0.12 * ySpan);
    const side = maxX - minX > 1e-6 && x > maxX - 0.15 * xSpan ? "left"
      : maxX - minX > 1e-6 && x < minX + 0.15 * xSpan ? "right" : "center";
    return `${crowded ? "bottom" : "top"} ${side}`;
  });
}

/** The recompute axis: log10 of percent of forward FLOPs, with zero at its own tick a decade below the smallest
 * non-zero overhead. Returns {x(overhead) → log10 position, axis: Plotly xaxis}. */
function recomputeAxis(overheads) {
  const positive = overheads.filter((o) => o > 0).map((o) => o * 100);
  const low = positive.length ? Math.min(...positive) : 1;
  const high = positive.length ? Math.max(...positive) : 100;
  const zeroDecade = Math.floor(Math.log10(low)) - 1;
  const topDecade = Math.max(zeroDecade + 2, Math.ceil(Math.log10(high)));
  const x = (overhead) => (overhead > 0 ? Math.log10(overhead * 100) : zeroDecade);
  const tickvals = [zeroDecade];
  const ticktext = ["0"];
  for (let decade = zeroDecade + 1; decade <= topDecade; decade += 1) {
    tickvals.push(decade);
    ticktext.push(percentText(10 ** decade / 100));
  }
  const span = Math.max(1, Math.log10(high) - zeroDecade);
  return {
    x,
    axis: { title: { text: "recompute (% of forward FLOPs, log scale)", standoff: 4 }, tickmode: "array", tickvals,
      ticktext, range: [zeroDecade - 0.12 * span, Math.log10(high) + 0.12 * span], zeroline: false },
  };
}

function hoverText(s) {
  const grads = s.grads_match === false ? "gradients differ" : "grads bitwise equal";
  return `<b>${scheduleLabel(s)}</b><br>peak ${formatBytes(s.executed_peak_bytes)} executed · ${formatBytes(s.predicted_peak_bytes)} predicted`
    + `<br>${overheadText(s.overhead)} · ${grads}<br>click to run this schedule`;
}

/** Our prediction of a schedule measured elsewhere, and how far it is from the measurement: "3.4 MiB (+0.01%)". */
function predictedCell(s) {
  const error = (s.predicted_peak_bytes - s.executed_peak_bytes) / s.executed_peak_bytes;
  const sign = error > 0 ? "+" : error < 0 ? "−" : "±";
  return el("span", { "data-testid": "schedule-predicted", "data-bytes": s.predicted_peak_bytes,
    "data-error": String(error), text: `${formatBytes(s.predicted_peak_bytes)} (${sign}${percentText(Math.abs(error))})` });
}

export function createParetoPanel(section, { onPick }) {
  const chart = section.querySelector("[data-testid=pareto-chart]");
  const table = section.querySelector(".schedule-table");
  const empty = section.querySelector(".schedules-empty");
  const screen = plottedOnScreen(chart);
  let schedules = [];

  function renderTable(current) {
    table.replaceChildren();
    const none = schedules.find((s) => s.policy === "none");
    // A run recorded elsewhere (torch) carries its measured peaks: our prediction and the difference stand beside them.
    const measuredBy = schedules.find((s) => s.executed_by)?.executed_by;
    const titles = measuredBy ? ["Schedule", `Peak (${measuredBy})`, "Predicted", "Recompute", "Grads"]
      : ["Schedule", "Peak", "Recompute", "Grads"];
    const head = table.createTHead().insertRow();
    for (const title of titles) head.append(el("th", { scope: "col", text: title }));
    const body = table.createTBody();
    schedules.forEach((listed, i) => {
      const row = body.insertRow();
      const isCurrent = sameSchedule(listed, current);
      // The listed runs replay the RNG; the current run may not, so its own numbers stand in its row.
      const s = isCurrent ? { ...listed, ...current } : listed;
      row.className = isCurrent ? "current" : "";
      const pick = el("button", { type: "button", "data-testid": "schedule-option", "data-policy": s.policy,
        "aria-pressed": String(isCurrent), text: scheduleLabel(s) });
      pick.addEventListener("click", () => onPick(schedules[i]));
      row.insertCell().append(pick);
      row.insertCell().append(el("span", { "data-bytes": s.executed_peak_bytes, text: formatBytes(s.executed_peak_bytes) }));
      if (measuredBy) row.insertCell().append(predictedCell(s));
      row.insertCell().textContent = overheadText(s.overhead);
      row.insertCell().textContent = s.grads_match === false ? (s.preserve_rng_state === false ? "differ (RNG not replayed)" : "differ") : "equal";
      for (const cell of [...row.cells].slice(1)) cell.className = "num";
      if (none && s.executed_peak_bytes > none.executed_peak_bytes) {
        row.classList.add("raises-peak");
        const why = body.insertRow();
        why.className = "schedule-why";
        const cell = why.insertCell();
        cell.colSpan = titles.length;
        cell.dataset.testid = "schedule-why";
        cell.textContent = `↑ ${formatBytes(s.executed_peak_bytes - none.executed_peak_bytes)} above no checkpointing. `
          + (s.verdict ?? "");
      }
    });
  }

  async function load(trace) {
    schedules = trace?.schedules ?? [];
    const current = trace?.schedule ?? null;
    empty.hidden = schedules.length > 0;
    chart.hidden = schedules.length === 0;
    renderTable(current);
    chart.dataset.points = String(schedules.length);
    chart.dataset.current = current ? scheduleLabel(current) : "";
    if (!schedules.length) return;      // hidden above; never purged (a pending Plotly redraw would throw)
    const currentIndex = schedules.findIndex((s) => sameSchedule(s, current));
    const frontier = [...(trace.pareto ?? [])].sort((a, b) => a.overhead - b.overhead);
    const axis = recomputeAxis([...schedules.map((s) => s.overhead), ...frontier.map((p) => p.overhead),
      ...(current ? [current.overhead] : [])]);
    const xs = schedules.map((s) => axis.x(s.overhead));
    const ys = schedules.map((s) => s.executed_peak_bytes);
    const labels = pointLabels(schedules);
    // Frontier points that no schedule already marks are clickable too: "optimal" at that budget.
    const budgets = frontier.filter((p) => !schedules.some((s) => s.executed_peak_bytes === p.predicted_peak_bytes
      && Math.abs(s.overhead - p.overhead) < 1e-9));
    const data = [{
      type: "scatter", mode: "markers+text", name: "schedules (executed)", cliponaxis: false,
      x: xs, y: ys, text: labels, textposition: "top center", textfont: { size: 11 },
      customdata: schedules.map((s, i) => i), hovertemplate: "%{hovertext}<extra></extra>",
      hovertext: schedules.map((s, i) => hoverText(i === currentIndex ? { ...s, ...current } : s)),
      marker: {
        size: schedules.map((s, i) => (i === currentIndex ? 17 : 11)),
        color: schedules.map((s) => POLICY_COLORS[s.policy] ?? "#555"),
        line: { color: schedules.map((s, i) => (i === currentIndex && current.grads_match === false ? "#D55E00" : "#111")),
          width: schedules.map((s, i) => (i === currentIndex ? 3.5 : 1)) },
      },
    }, {
      type: "scatter", mode: "lines", name: "Pareto frontier (predicted)", hoverinfo: "skip",
      x: frontier.map((p) => axis.x(p.overhead)), y: frontier.map((p) => p.predicted_peak_bytes),
      line: { shape: "hv", dash: "dot", color: "#374151", width: 1.5 },
    }, {
      type: "scatter", mode: "markers", name: "optimal at a budget", x: budgets.map((p) => axis.x(p.overhead)),
      y: budgets.map((p) => p.predicted_peak_bytes), customdata: budgets.map((p) => p.budget_bytes),
      hovertext: budgets.map((p) => `<b>${optimalLabel(p.budget_bytes)}</b><br>peak ${formatBytes(p.predicted_peak_bytes)} predicted`
        + `<br>${overheadText(p.overhead)}<br>click to run the optimal schedule at this budget`),
      hovertemplate: "%{hovertext}<extra></extra>",
      marker: { symbol: "diamond-open", size: 9, color: "#374151", line: { width: 1.5 } },
    }];
    // A run no listed schedule matches (manual, optimal at its own budget): a star, its label on a leader line into the
    // empty space below the points, off the other labels and the frontier's diamonds.
    const annotations = [];
    if (current && currentIndex < 0) {
      const rightHalf = axis.x(current.overhead) > (axis.axis.range[0] + axis.axis.range[1]) / 2;
      annotations.push({ x: axis.x(current.overhead), y: current.executed_peak_bytes, text: scheduleLabel(current), showarrow: true,
        arrowhead: 0, arrowwidth: 1, arrowcolor: "#374151", ax: rightHalf ? -70 : 70, ay: 55, font: { size: 11 },
        bgcolor: "rgba(255,255,255,0.9)", bordercolor: POLICY_COLORS[current.policy] ?? "#555", borderpad: 2 });
      data.push({
        type: "scatter", mode: "markers", name: "current", x: [axis.x(current.overhead)], y: [current.executed_peak_bytes],
        cliponaxis: false, hovertemplate: "%{hovertext}<extra></extra>",
        hovertext: [hoverText(current).replace("click to run this schedule", "the current run")],
        marker: { symbol: "star", size: 18, color: POLICY_COLORS[current.policy] ?? "#555", line: { color: "#111", width: 2 } },
      });
    }
    const peaks = data.flatMap((d) => d.y);
    const [left, right] = axis.axis.range;
    data[0].textposition = labelPositions(xs, ys, labels, right - left, Math.max(...peaks) * 1.18);
    const layout = {
      height: chart.clientHeight || 240, margin: { l: 64, r: 16, t: 26, b: 40 }, showlegend: false, hovermode: "closest", annotations,
      xaxis: axis.axis,
      yaxis: byteAxis(Math.max(...peaks), { title: { text: "peak bytes" }, range: [0, Math.max(...peaks) * 1.18] }),
    };
    // the table above now, for the keyboard; the chart once on screen (on-screen.js)
    return screen.request(async () => {
      const Plotly = await loadPlotly();
      await Plotly.react(chart, data, layout, { displayModeBar: false, responsive: true });
      if (!chart.dataset.bound) {
        chart.dataset.bound = "1";
        chart.on("plotly_click", (event) => {
          const point = event.points?.[0];
          if (point && point.curveNumber === 0) onPick(schedules[point.customdata]);
          if (point && point.curveNumber === 2) onPick({ policy: "optimal", params: { budget_bytes: point.customdata } });
        });
      }
    });
  }

  /** While a trace has no schedules: say why, and offer to run them when they are not fetched on their own. */
  function waiting(message, onRun) {
    empty.replaceChildren(message);
    if (onRun) {
      const run = el("button", { type: "button", class: "run-schedules", "data-testid": "run-schedules", text: "Run every schedule" });
      run.addEventListener("click", () => { run.disabled = true; onRun(); });
      empty.append(" ", run);
    }
  }

  return { load, waiting };
}
