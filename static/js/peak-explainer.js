// peak-explainer.js — "Why this peak": what is alive at the cursor step, grouped by layer × kind (from the storages'
// intervals and scopes, no request), the trace's verdict on its peak, and the levers that would lower it: each one
// executed by the server (POST /api/levers) on request, ranked, and applied as an edit on click.
import { fetchLevers } from "./api.js";
import { el } from "./dom.js";
import { formatBytes, signedBytes } from "./format.js";
import { KIND_COLORS } from "./palette.js";
import { percentText } from "./schedule.js";
import { topLayer } from "./trace-index.js";

const SHOWN_GROUPS = 8;
const KIND_WORDS = { input: "batch", param: "params", activation: "activations", grad: "grads", optimizer: "optimizer state" };


/** The storages alive at `step` grouped by (top-level layer, kind), largest first: [{layer, kind, bytes, tensors}]. */
export function breakdownAt(trace, step) {
  const groups = new Map();
  const alive = new Map();
  for (const storage of trace.storages) {
    if (storage.born > step || (storage.freed !== null && step > storage.freed)) continue;
    const key = `${topLayer(storage.scope)}|${storage.kind}`;
    if (!groups.has(key)) groups.set(key, { layer: topLayer(storage.scope), kind: storage.kind, bytes: 0, tensors: [] });
    groups.get(key).bytes += storage.nbytes;
    alive.set(storage.id, key);
  }
  for (const tensor of trace.tensors) {
    const key = alive.get(tensor.storage);
    if (key) groups.get(key).tensors.push(tensor);
  }
  return [...groups.values()].sort((a, b) => b.bytes - a.bytes || a.layer.localeCompare(b.layer));
}

/** The group's tensor a click selects: the largest one (a view's storage is its base's). */
const largest = (group) => group.tensors.reduce((best, t) => (!best || t.nbytes > best.nbytes ? t : best), null);

export function createPeakExplainer(section, { onSelect, onGoTo, onApply, current }) {
  const verdict = section.querySelector("[data-testid=peak-verdict]");
  const stepLine = section.querySelector(".explainer-step");
  const bars = section.querySelector("[data-testid=peak-breakdown]");
  const leversBox = section.querySelector(".levers");
  let trace = null;
  let shownStep = null;
  let leverRequest = null;

  function load(next) {
    trace = next;
    shownStep = null;
    verdict.textContent = trace.summary.peak?.verdict ?? "";
    resetLevers();
  }

  function update(step) {
    if (!trace || step === shownStep) return;
    shownStep = step;
    const groups = breakdownAt(trace, step);
    const live = trace.steps[step].live_bytes;
    const atPeak = step === trace.summary.peak_step;
    stepLine.replaceChildren(
      `At step ${step} (${trace.steps[step].phase}) `, el("b", { "data-testid": "explainer-live", "data-bytes": live, text: formatBytes(live) }),
      ` are alive${atPeak ? " — this is the peak." : `; the peak is ${formatBytes(trace.summary.peak_bytes)} at step ${trace.summary.peak_step}. `}`,
    );
    if (!atPeak) {
      const go = el("button", { type: "button", class: "link-button", "data-testid": "go-to-peak", text: "go to the peak" });
      go.addEventListener("click", () => onGoTo(trace.summary.peak_step));
      stepLine.append(go);
    }
    bars.replaceChildren();
    const shown = groups.slice(0, SHOWN_GROUPS);
    const rest = groups.slice(SHOWN_GROUPS);
    const widest = Math.max(1, ...shown.map((g) => g.bytes));
    for (const group of shown) bars.append(groupRow(group, widest, live));
    if (rest.length) {
      const bytes = rest.reduce((sum, g) => sum + g.bytes, 0);
      bars.append(el("li", { class: "rest", "data-bytes": bytes, text: `${rest.length} more groups: ${formatBytes(bytes)}` }));
    }
  }

  function groupRow(group, widest, live) {
    const share = live ? group.bytes / live : 0;
    const button = el("button", { type: "button", class: "group", "data-layer": group.layer, "data-kind": group.kind,
      "data-bytes": group.bytes, title: `${group.tensors.length} tensor(s); click to select the largest`,
    }, el("span", { class: "group-name", text: `${group.layer} · ${KIND_WORDS[group.kind] ?? group.kind}` }),
    el("span", { class: "group-bar" }, el("span", { class: "fill", style: `width:${(100 * group.bytes / widest).toFixed(1)}%;background:${KIND_COLORS[group.kind] ?? "#999"}` })),
    el("span", { class: "group-bytes", text: `${formatBytes(group.bytes)} · ${percentText(share)}` }));
    button.addEventListener("click", () => {
      const tensor = largest(group);
      if (tensor) onSelect(`t${tensor.id}`);
    });
    return el("li", {}, button);
  }

  function resetLevers() {
    leverRequest?.abort();
    leverRequest = null;
    const find = el("button", { type: "button", "data-testid": "find-levers", text: "What would lower it?" });
    find.addEventListener("click", () => findLevers(find));
    leversBox.replaceChildren(find, el("span", { class: "hint", text: " runs every lever on the server: a few seconds" }));
  }

  async function findLevers(button) {
    const { spec, checkpoint } = current();
    if (!spec) return;
    button.disabled = true;
    button.textContent = "Running every lever…";
    leverRequest = new AbortController();
    try {
      const report = await fetchLevers(spec, checkpoint, leverRequest.signal);
      leversBox.replaceChildren(leverTable(report), freezeComparison(report));
    } catch (error) {
      if (error.name === "AbortError") return;
      button.disabled = false;
      button.textContent = "What would lower it?";
      leversBox.append(el("p", { class: "error", text: `Could not run the levers: ${error.message}` }));
    }
  }

  function leverTable(report) {
    const table = el("table", { class: "lever-table", "data-testid": "levers" });
    const head = table.createTHead().insertRow();
    for (const title of ["Lever", "Peak", "Change", "Recompute", "Grads", ""]) head.append(el("th", { scope: "col", text: title }));
    const body = table.createTBody();
    for (const lever of report.levers) {
      const row = body.insertRow();
      row.dataset.lever = lever.lever;
      row.className = lever.delta_bytes < 0 ? "lowers" : "raises";
      const why = !lever.reason ? "" : lever.reason === report.current.verdict
        ? " The peak does not move: it is the one described above." : ` ${lever.reason}`;
      row.insertCell().append(el("span", { class: "lever-name", text: lever.lever }),
        el("span", { class: "lever-why", text: ` — ${lever.description}.${why}` }),
        lever.warning ? el("span", { class: "lever-warning", text: ` ⚠ ${lever.warning}` }) : "");
      row.insertCell().append(el("span", { "data-bytes": lever.peak_bytes, text: formatBytes(lever.peak_bytes) }));
      row.insertCell().append(el("span", { "data-bytes": lever.delta_bytes, text: lever.delta_bytes === 0 ? "±0" : signedBytes(lever.delta_bytes) }));
      row.insertCell().textContent = extraFlops(lever.extra_flops);
      row.insertCell().textContent = lever.grads_match === null ? "other data" : lever.grads_match ? "equal" : "differ";
      const apply = el("button", { type: "button", class: "apply-lever", text: "Apply" });
      apply.addEventListener("click", () => onApply(lever));
      row.insertCell().append(apply);
      for (const cell of [...row.cells].slice(1, 5)) cell.className = "num";
    }
    return table;
  }

  /** "Freeze the first half" against "freeze the last half": the same count of frozen blocks, their traced peaks. */
  function freezeComparison(report) {
    const first = report.levers.find((lever) => lever.freeze === "first");
    const last = report.levers.find((lever) => lever.freeze === "last");
    if (!first || !last) return "";
    const peak = (lever) => el("strong", { "data-bytes": lever.peak_bytes, text: formatBytes(lever.peak_bytes) });
    return el("p", { class: "freeze-compare", "data-testid": "freeze-compare" },
      "Freeze the first half: peak ", peak(first), " · freeze the last half: peak ", peak(last),
      ` (now ${formatBytes(report.current.peak_bytes)}). The same weights stop learning either way, but only a frozen `
      + "prefix is left off the tape: behind the last half, the gradient still flows back to the first, so its "
      + "activations stay saved.");
  }

  /** Extra recompute as a share of the forward's FLOPs ("+100%", "−0.60%"), or "none". */
  function extraFlops(flops) {
    if (flops === 0) return "none";
    const share = percentText(Math.abs(flops) / Math.max(1, trace.summary.forward_flops));
    return `${flops > 0 ? "+" : "−"}${share}`;
  }

  return { load, update };
}
