// The ledger page: reads the form, asks /api/ledger, draws the rows, the charts and the reconciliation.
// Everything shown comes from the API; the page only formats it. Text goes in with textContent, never HTML.

import { el } from "../lib/dom.js";
import { formatBytes as formatBytesIn } from "../lib/format.js";
import { fetchLedger } from "../state/api.js";

const Plotly = window.Plotly;

// Okabe–Ito: distinguishable with every common colour-vision deficiency.
const COLORS = {
  naive: "#0072B2", flash: "#E69F00", resident: "#56B4E9", fits: "#009E73", oom: "#D55E00",
  device: "#000000", curve: "#999999", point: "#CC79A7",
};
const PLOT_CONFIG = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
const FONT = { family: "system-ui, sans-serif", size: 12, color: "#1f2937" };

const KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;

const form = document.getElementById("ledger-form");
const problemsBox = document.getElementById("ledger-problems");
const results = document.querySelector(".ledger-results");

// ---------- formatting ----------

const formatBytes = (bytes) => formatBytesIn(bytes, { digits: 2 });

function formatCount(count) {
  if (count >= 1e9) return `${formatNumber(count / 1e9, 2)} B`;
  if (count >= 1e6) return `${formatNumber(count / 1e6, 1)} M`;
  return count >= 1e4 ? `${formatNumber(count / 1e3, 1)} K` : formatNumber(count, 0);   // a small model is not "0 M"
}

function formatMiB(bytes) {
  return `${formatNumber(bytes / MiB, 2)} MiB`;
}

/** Up to `digits` decimals, grouped ("1,184.5"); not format.js's formatNumber, which gives 4 significant figures. */
function formatNumber(value, digits) {
  return value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

function formatUnits(units) {
  if (units === 0) return "0";
  return units >= 0.01 ? formatNumber(units, 2) : units.toExponential(1);
}

// ---------- table cells ----------

function cells(tag, values, numericFrom = Infinity) {
  return values.map((value, index) => el(tag, { text: String(value), class: index >= numericFrom ? "num" : null }));
}

// ---------- the form and the URL ----------

function queryFromForm() {
  // Only fields that differ from their defaults, so links stay short ("/ledger?layers=24&hidden=1024").
  const params = new URLSearchParams();
  for (const field of form.querySelectorAll("[name]")) {
    const fallback = field.dataset.default;
    const same = field.type === "number" ? Number(field.value) === Number(fallback) && field.value !== ""
                                         : field.value === fallback;
    if (!same) params.set(field.name, field.value);
  }
  return params;
}

function showProblems(body) {
  for (const field of form.querySelectorAll("[aria-invalid]")) field.removeAttribute("aria-invalid");
  problemsBox.replaceChildren();
  if (!body) { problemsBox.hidden = true; return; }
  problemsBox.append(el("p", { text: "Fix these fields and compute again:" }));
  const list = el("ul");
  for (const problem of body.problems || [{ path: "", message: body.error }]) {
    list.append(el("li", { text: `${problem.path} ${problem.message}`.trim() }));
    const field = form.elements.namedItem(problem.path);
    if (field) field.setAttribute("aria-invalid", "true");
  }
  problemsBox.append(list);
  problemsBox.hidden = false;
}

async function update() {
  const params = queryFromForm();
  const query = params.toString();
  history.replaceState(null, "", query ? `/ledger?${query}` : "/ledger");
  let body;
  try {
    body = await fetchLedger(query);
  } catch (error) {   // a refusal carries the server's problems; no status: the server was not reached
    showProblems(error.status ? { error: error.message, ...error.body }
      : { error: `The server could not be reached (${error.message}).` });
    results.classList.add("stale");
    return;
  }
  showProblems(null);
  render(body);
  results.classList.remove("stale");
  document.body.dataset.ledgerReady = "true";
}

// ---------- rendering ----------

function render(ledger) {
  renderSummary(ledger);
  renderPerGpu(ledger);
  renderFits(ledger);
  renderRowsTable(ledger);
  renderRowsChart(ledger);
  renderCheckpoint(ledger);
  renderBatch(ledger);
  renderReconciliation(ledger);
}

function renderSummary(ledger) {
  const c = ledger.config;
  const items = [
    ["Parameters", formatCount(ledger.params)],
    ["Resident state", `${formatBytes(ledger.resident_bytes)} (${formatNumber(ledger.resident.bytes_per_param, 2)} B/param)`],
    ["Per layer", formatBytes(ledger.per_layer_bytes)],
    ["Head (logits + probs)", formatBytes(ledger.head_bytes)],
    [`Activations (${c.layers} layers + head)`, formatBytes(ledger.activation_bytes)],
    ["Per token", `${formatBytes(ledger.per_token_bytes)} (${formatBytes(ledger.per_token_layer_bytes)}/layer)`],
    ["k* = √(L·b/a): the best checkpoint interval (L layers, a = one layer's saved bytes, b = one kept layer input)", formatNumber(ledger.k_star, 2)],
    [`Max batch on one ${formatNumber(c.device_gib, 2)} GiB GPU, nothing sharded`,
      ledger.max_batch_capped ? `${formatNumber(ledger.max_batch, 0)} (the batch field's limit: more would fit)` : formatNumber(ledger.max_batch, 0)],
  ];
  const summary = document.getElementById("ledger-summary");
  summary.replaceChildren(...items.map(([term, value]) => el("div", {}, el("dt", { text: term }), el("dd", { text: value }))));
}

const ROW_TITLES = {
  parameters: "Parameters", gradients: "Gradients", optimizer_state: "Optimizer state",
  activations: "Activations", communication_buffers: "Communication buffers",
};

function layout(c) {
  const parts = [`dp ${c.dp}`, `ZeRO ${c.zero}`, `tp ${c.tp}${c.sp ? " + sp" : ""}`, `pp ${c.pp}`];
  if (c.pp > 1) parts.push(`${c.micro_batches} micro-batches${c.vpp > 1 ? `, ${c.vpp} virtual stages` : ""}`);
  if (c.recompute !== "none") parts.push("full recompute");
  return parts.join(" · ");
}

function renderPerGpu(ledger) {
  const gpu = ledger.per_gpu;
  const c = ledger.config;
  const device = formatBytes(ledger.device_bytes);
  const stage = c.pp > 1 ? ` (pipeline stage ${gpu.stage}, the most loaded)` : "";
  document.getElementById("ledger-per-gpu-lede").textContent =
    `${layout(c)} on ${gpu.gpus} GPU${gpu.gpus === 1 ? "" : "s"}: one GPU${stage} peaks at ${formatBytes(gpu.peak_bytes)}, `
    + (gpu.fits ? `which fits in ${device}.` : `over the ${device} device.`)
    + ` The peak walks backward a layer at a time (activations freed as gradients appear); the rows below, all at once, total ${formatBytes(gpu.total_bytes)}.`;
  document.querySelector("#ledger-per-gpu tbody").replaceChildren(...gpu.rows.map((row) => el("tr", {},
    el("th", { text: ROW_TITLES[row.name] || row.name, scope: "row" }),
    el("td", { text: formatBytes(row.bytes), class: "num" }), el("td", { text: row.why }))));
  const m = gpu.megatron;
  document.getElementById("ledger-megatron").textContent =
    `Megatron-LM's theoretical memory for the same layout: ${formatBytes(m.total_bytes)} (weights and optimizer ${formatBytes(m.weight_and_optimizer_bytes)}, `
    + `activations ${formatBytes(m.activation_bytes)}${m.overhead_factor > 1 ? `, with its flat ${Math.round((m.overhead_factor - 1) * 100)}% for temporaries` : ""}). `
    + "It assumes a 16-bit model with 18 B per parameter (6 + 12/dp with its distributed optimizer), knows no ZeRO-2 or 3, and counts the first stage; "
    + "its activations are always those of selective recomputation (attention's scores re-run in backward: s·b·h·(10 + 24/tp) a layer), so they do not move with this page's recompute choice.";
  const record = gpu.record;
  document.getElementById("ledger-record-lede").textContent = record.example
    ? "Record this configuration on the tape, fake (shapes and bytes, no GPUs), with the example model that is this model; open run.json in the Explorer to step through rank 0:"
    : "Record this configuration on the tape, fake (shapes and bytes, no GPUs): no example model here has this shape, so give your own model file (a build() that wraps the model as your training script does):";
  document.getElementById("ledger-record-command").textContent = record.command;
}

function renderFits(ledger) {
  const fits = ledger.fits;
  const c = ledger.config;
  document.getElementById("ledger-fits-title").textContent =
    `What fits on ${fits.gpus} × ${formatNumber(c.device_gib, 2)} GiB`;
  document.getElementById("ledger-fits-lede").textContent =
    `${fits.fitting} of ${fits.tried} ways to spread this step over ${fits.gpus} GPUs (dp · tp · pp = ${fits.gpus}) fit, `
    + `at micro-batch ${c.batch} × ${formatNumber(c.seq, 0)} tokens. `
    + (fits.fitting ? `The simplest that fits: ${layout({ ...c, ...fits.rows[0] })}, ${formatBytes(fits.rows[0].peak_bytes)} per GPU. ` : "None fits: try a smaller micro-batch, or more GPUs. ")
    + "The fitting ones come first: the fewest model-parallel ranks, the lowest ZeRO stage, no recomputation.";
  document.querySelector("#ledger-fits tbody").replaceChildren(...fits.rows.map((row) => el("tr", { class: row.fits ? "fits" : "oom" },
    ...cells("td", [row.dp, row.zero, row.tp], 0), el("td", { text: row.sp ? "yes" : "no" }),
    el("td", { text: String(row.pp), class: "num" }), el("td", { text: row.recompute }),
    ...cells("td", [formatBytes(row.peak_bytes), formatBytes(row.megatron_bytes)], 0),
    el("td", { text: row.fits ? "fits" : "does not fit" }))));
}

function rowSection(title, rows, unitBytes) {
  const body = el("tbody");
  body.append(el("tr", { class: "section" }, el("th", { text: title, colspan: "7", scope: "rowgroup" })));
  for (const row of rows) {
    const tr = el("tr", { class: `group-${row.group}` }, cells("td", [
      row.name, row.op, row.saved_by.join(", "), `[${row.shape.join(", ")}]`, row.dtype,
      formatBytes(row.bytes), formatUnits(row.bytes / unitBytes),
    ], 5));
    tr.title = row.why;
    body.append(tr);
  }
  return body;
}

function renderRowsTable(ledger) {
  const table = document.getElementById("ledger-rows");
  for (const body of table.querySelectorAll("tbody")) body.remove();
  const c = ledger.config;
  table.append(
    rowSection(`One layer, ${c.attention} attention (× ${c.layers}): ${formatBytes(ledger.per_layer_bytes)}`, ledger.rows, ledger.unit_bytes),
    rowSection(`Once per network: ${formatBytes(ledger.network_bytes)}`, ledger.network_rows, ledger.unit_bytes),
    rowSection(`Head: ${formatBytes(ledger.head_bytes)}`, ledger.head_rows, ledger.unit_bytes),
  );
}

function renderRowsChart(ledger) {
  const naive = ledger.per_attention.naive.rows;
  const flash = ledger.per_attention.flash.rows;
  const names = [...new Set([...naive, ...flash].map((row) => row.name))];
  const trace = (rows, kind) => {
    const byName = new Map(rows.map((row) => [row.name, row]));
    return {
      type: "bar", orientation: "h", name: `${kind} (${formatBytes(ledger.per_attention[kind].per_layer_bytes)}/layer)`,
      y: names, x: names.map((name) => (byName.has(name) ? byName.get(name).bytes / MiB : null)),
      marker: { color: COLORS[kind] },
      hovertemplate: "%{y}: %{x:,.3f} MiB<extra>" + kind + "</extra>",
    };
  };
  Plotly.react("chart-rows", [trace(naive, "naive"), trace(flash, "flash")], {
    barmode: "group", bargap: 0.25, height: 120 + 22 * names.length, font: FONT,
    margin: { l: 170, r: 20, t: 30, b: 40 },
    xaxis: { title: { text: "MiB saved per layer" }, rangemode: "tozero" },
    yaxis: { autorange: "reversed", automargin: true },
    legend: { orientation: "h", x: 0, y: 1, yanchor: "bottom" },
  }, PLOT_CONFIG);
}

function renderCheckpoint(ledger) {
  const curve = ledger.checkpoint_curve;
  const budget = (ledger.device_bytes - ledger.resident_bytes) / GiB;
  const points = ledger.checkpoint;
  const traces = [
    { type: "scatter", mode: "lines", name: "peak(k)", x: curve.map((p) => p.k), y: curve.map((p) => p.peak_bytes / GiB),
      line: { color: COLORS.curve, width: 2 }, hovertemplate: "k=%{x}: %{y:.2f} GiB<extra></extra>" },
    { type: "scatter", mode: "markers+text", name: "k = 1, √L, L", x: points.map((p) => p.k),
      y: points.map((p) => p.peak_bytes / GiB),
      text: points.map((p) => `${formatNumber(p.peak_bytes / GiB, 1)} GiB · ${p.compute_factor.toFixed(2)}×`),
      textposition: points.map((p, i) => (i === points.length - 1 ? "bottom left" : "top right")),
      marker: { color: COLORS.point, size: 10, symbol: "diamond" }, cliponaxis: false,
      hovertemplate: "k=%{x}: %{y:.2f} GiB<extra></extra>" },
  ];
  const shapes = budget > 0 ? [{ type: "line", xref: "paper", x0: 0, x1: 1, y0: budget, y1: budget,
                                  line: { color: COLORS.oom, dash: "dash", width: 2 } }] : [];
  const annotations = [budget > 0
    ? { xref: "paper", x: 0, y: budget, yanchor: "bottom", xanchor: "left", showarrow: false,
        text: `room for activations on the device: ${formatNumber(budget, 1)} GiB`, font: { color: COLORS.oom } }
    : { xref: "paper", yref: "paper", x: 0, y: 1, xanchor: "left", yanchor: "top", showarrow: false,
        text: "resident state alone is over the device", font: { color: COLORS.oom } }];
  Plotly.react("chart-checkpoint", traces, {
    height: 340, font: FONT, margin: { l: 60, r: 20, t: 10, b: 50 }, showlegend: false, shapes, annotations,
    xaxis: { title: { text: "k: layers per checkpointed segment" }, rangemode: "tozero" },
    yaxis: { title: { text: "peak activations (GiB)" }, rangemode: "tozero" },
  }, PLOT_CONFIG);

  const kStar = formatNumber(ledger.k_star, 2);
  const layers = ledger.config.layers;
  // k* is defined where it is read: what L, a and b are, with this model's numbers.
  const defined = `Keeping every k-th layer's input and recomputing one k-layer segment at a time in backward peaks at about (L/k)·b + k·a, `
    + `with L = ${layers} layers, a = ${formatBytes(ledger.per_layer_bytes)} (what one layer saves for backward) and `
    + `b = ${formatBytes(ledger.unit_bytes)} (one kept layer input, a tokens × hidden tensor); k* = √(L·b/a) minimizes it.`;
  document.getElementById("ledger-kstar").textContent = `${defined} ` + (ledger.k_star < 1
    ? `Here k* = ${kStar} < 1: one layer's saved tensors outweigh all ${layers} kept inputs, so checkpoint every layer (k = 1), as Megatron-LM does. Any k < L recomputes every layer once, so the √L point pays the same 4/3 and holds more.`
    : `Here k* = ${kStar}; the lowest peak on the curve is at k = ${ledger.k_best}.`);

  const body = document.querySelector("#ledger-checkpoint tbody");
  body.replaceChildren(...points.map((p) => el("tr", {}, cells("td", [
    p.recomputes ? String(p.k) : `${p.k} (none)`, formatBytes(p.peak_bytes), `${p.compute_factor.toFixed(2)}×`, String(p.max_batch),
  ], 1))));
}

function renderBatch(ledger) {
  const curve = ledger.batch_curve;
  const device = ledger.device_bytes / GiB;
  const x = curve.map((p) => p.batch);
  const traces = [
    { type: "bar", name: "resident state", x, y: curve.map((p) => p.resident_bytes / GiB),
      marker: { color: COLORS.resident }, hovertemplate: "batch %{x}: %{y:.2f} GiB resident<extra></extra>" },
    { type: "bar", name: "activations", x, y: curve.map((p) => p.activation_bytes / GiB),
      marker: { color: curve.map((p) => (p.fits ? COLORS.fits : COLORS.oom)),
                pattern: { shape: curve.map((p) => (p.fits ? "" : "/")), fgcolor: "#ffffff" } },
      hovertemplate: "batch %{x}: %{y:.2f} GiB activations<extra></extra>" },
  ];
  const shapes = [{ type: "line", xref: "paper", x0: 0, x1: 1, y0: device, y1: device,
                    line: { color: COLORS.device, dash: "dash", width: 2 } }];
  const annotations = [{ xref: "paper", x: 1, y: device, yanchor: "bottom", xanchor: "right", showarrow: false,
                         text: `device: ${formatNumber(device, 2)} GiB`, bgcolor: "rgba(255,255,255,0.85)" }];
  Plotly.react("chart-batch", traces, {
    barmode: "stack", height: 340, font: FONT, margin: { l: 60, r: 20, t: 10, b: 50 }, shapes, annotations,
    xaxis: { title: { text: "micro-batch (sequences)" } },
    yaxis: { title: { text: "GiB" }, rangemode: "tozero" },
    legend: { orientation: "h", y: 1.02, yanchor: "bottom", x: 1, xanchor: "right" },
  }, PLOT_CONFIG);

  const fit = document.getElementById("ledger-fit");
  fit.textContent = ledger.max_batch > 0
    ? `Batch ${ledger.max_batch} fits (${formatBytes(ledger.resident_bytes)} resident + ${formatBytes(ledger.per_sequence_bytes)} per sequence); batch ${ledger.max_batch + 1} does not. Green fits, hatched red does not. Allocator slack and backward's transient gradients come on top.`
    : `Not even batch 1 fits: ${formatBytes(ledger.resident_bytes)} resident + ${formatBytes(ledger.per_sequence_bytes)} per sequence is over the device.`;
}

function renderReconciliation(ledger) {
  const k = ledger.korthikanti;
  const figures = [
    ["Korthikanti et al., s·b·h·(34 + 5·a·s/h) at 16 bits", k.formula_fp16_bytes],
    ["Our rows priced at 2 B/element, 1 B/mask", k.rows_at_16bit_bytes],
    [`Our rows at ${ledger.config.dtype}, 1 B/mask (Korthikanti's rows)`, k.rows_at_dtype_bytes],
    ["What the engine saves per layer (naive, dropout)", k.engine_bytes],
    ["The reference GPT's stated layer (12 × 2048, 16 heads, batch 8 × 1,024 tokens, fp32: 38.5 units of 64 MiB)", k.seed.per_layer_bytes],
    ["Korthikanti's rows at fp32 for that layer", k.seed.korthikanti_fp32_bytes],
    [`…plus ${k.seed.extra_row.name} [${k.seed.extra_row.shape.join(", ")}]`, k.seed.reconstructed_bytes],
  ];
  document.querySelector("#ledger-figures tbody").replaceChildren(
    ...figures.map(([label, bytes]) => el("tr", {}, el("th", { text: label, scope: "row" }),
                                                 el("td", { text: formatMiB(bytes), class: "num" }))));
  document.getElementById("ledger-reconciliation").replaceChildren(...k.explanation.map((line) => el("p", { text: line })));
}

// ---------- wiring ----------

// Every field applies the same way: a choice at once, a number as you type (debounced) or on leaving the field.
const presetMenu = document.getElementById("f-preset");
const presets = JSON.parse(presetMenu.dataset.presets);

function fieldValue(field) {
  return field.type === "number" ? Number(field.value) : field.value;
}

/** The preset whose every field equals the form's, or "" (custom). */
function matchingPreset() {
  return Object.keys(presets).find((name) => Object.entries(presets[name]).every(([key, value]) => {
    const field = form.elements.namedItem(key);
    return field && String(fieldValue(field)) === String(value);
  })) ?? "";
}

presetMenu.addEventListener("change", () => {
  const shape = presets[presetMenu.value];
  if (!shape) return;
  for (const [key, value] of Object.entries(shape)) {
    const field = form.elements.namedItem(key);
    if (field) field.value = String(value);
  }
  update();
});

let typing = null;
form.addEventListener("submit", (event) => { event.preventDefault(); update(); });
form.addEventListener("change", (event) => {
  if (event.target === presetMenu) return;
  clearTimeout(typing);
  presetMenu.value = matchingPreset();
  update();
});
form.addEventListener("input", (event) => {
  if (event.target.type !== "number") return;
  clearTimeout(typing);
  typing = setTimeout(() => { presetMenu.value = matchingPreset(); update(); }, 400);
});
presetMenu.value = matchingPreset();
update();
