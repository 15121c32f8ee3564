// peak-explainer.js — "Why this peak": what is alive at the cursor step, grouped by layer × kind (from the storages'
// intervals and scopes, no request), the trace's verdict on its peak, and the levers that would lower it: each one
// executed by the server (POST /api/levers) on request, ranked, and applied as an edit on click. In a double backward
// it attributes the bytes the first backward saved for the second (steps[].recorded_backward_bytes).
import { el, setAttribute, setText } from "../../lib/dom.js";
import { formatBytes, signedBytes } from "../../lib/format.js";
import { KIND_COLORS } from "../../lib/palette.js";
import { holdersAt } from "../../model/live-bytes.js";
import { percentText } from "../../model/schedule.js";
import { topLayer } from "../../model/trace-index.js";
import { requestLevers } from "../../state/workspace.js";

const SHOWN_GROUPS = 8;
const KEPT_LEVER_REPORTS = 8;     // lever reports kept for models met again (undo, redo); each is a few KiB
const RECORDED_BACKWARD = "backward (recorded)";   // the scope of a create_graph backward's own ops (backend/tape/grad_mode.py)
const KIND_WORDS = { input: "batch", param: "params", activation: "activations", grad: "grads", optimizer: "optimizer state" };


/** A trace's storages as the breakdown reads them, worked out once per trace (not at every step): their interval,
 * bytes, kind, top-level layer and tensors. */
export function breakdownStorages(trace) {
  const tensorsOf = new Map();
  for (const tensor of trace.tensors) {
    if (!tensorsOf.has(tensor.storage)) tensorsOf.set(tensor.storage, []);
    tensorsOf.get(tensor.storage).push(tensor);
  }
  return trace.storages.map((storage) => ({ born: storage.born, freed: storage.freed, nbytes: storage.nbytes,
    layer: topLayer(storage.scope), kind: storage.kind, tensors: tensorsOf.get(storage.id) ?? [] }));
}

/** The storages alive at `step` grouped by (top-level layer, kind), largest first: [{layer, kind, bytes, storages,
 * tensorCount}]; `storages` is breakdownStorages(trace), grouped by the memory core (model/live-bytes.js). */
export function breakdownAt(storages, step) {
  return holdersAt(step, storages, (storage) => storage.layer).map(({ scope, kind, bytes, storages: held }) =>
    ({ layer: scope, kind, bytes, storages: held, tensorCount: held.reduce((count, s) => count + s.tensors.length, 0) }));
}

/** A group's kind in words; the recorded backward's activations are what a double backward pays for. */
const groupWords = (group) => (group.layer === RECORDED_BACKWARD && group.kind === "activation"
  ? "the first backward's intermediates, saved for the second" : KIND_WORDS[group.kind] ?? group.kind);

/** The group's tensor a click selects: the largest one, the first made of equals (a view's storage is its base's). */
const largest = (group) => group.storages.flatMap((storage) => storage.tensors)
  .reduce((best, t) => (!best || t.nbytes > best.nbytes || (t.nbytes === best.nbytes && t.id < best.id) ? t : best), null);

export function createPeakExplainer(section, { onSelect, onGoTo, onApply, current }) {
  const verdict = section.querySelector("[data-testid=peak-verdict]");
  const stepLine = section.querySelector(".explainer-step");
  const bars = section.querySelector("[data-testid=peak-breakdown]");
  const leversBox = section.querySelector(".levers");
  let trace = null;
  let storages = [];       // breakdownStorages(trace)
  let shownStep = null;
  let leverRequest = null;
  // The bars are rows kept from step to step, one per (layer, kind), updated in place: a step changes their bytes
  // far more often than which groups are shown, and building them anew was a quarter of a step's time on a big model.
  const rows = new Map();      // `${layer}\u0000${kind}` -> { item, button, fill, bytesText, group }, for this trace
  const restItem = el("li", { class: "rest" });
  const goToPeak = el("button", { type: "button", class: "link-button", "data-testid": "go-to-peak", text: "go to the peak" });
  goToPeak.addEventListener("click", () => onGoTo(trace.summary.peak_step));
  const leverReports = new Map();   // what the server ran, by the model and checkpoint it ran them on (newest last)

  const leverKey = ({ spec, checkpoint }) => JSON.stringify([spec, checkpoint ?? null]);
  function keepReport(key, report) {
    leverReports.delete(key);
    leverReports.set(key, report);
    if (leverReports.size > KEPT_LEVER_REPORTS) leverReports.delete(leverReports.keys().next().value);
  }

  function load(next) {
    trace = next;
    storages = breakdownStorages(next);
    shownStep = null;
    rows.clear();
    bars.replaceChildren();
    // A rank of a sharded run says its peak in sharding's words too (all-gathered parameters, shards, buffers).
    const sharding = trace.summary.peak_sharding;
    verdict.textContent = [trace.summary.peak?.verdict, sharding && `${sharding[0].toUpperCase()}${sharding.slice(1)}.`]
      .filter(Boolean).join(" ");
    resetLevers();
  }

  function update(step) {
    if (!trace || step === shownStep) return;
    shownStep = step;
    const groups = breakdownAt(storages, step);
    const live = trace.steps[step].live_bytes;
    const atPeak = step === trace.summary.peak_step;
    stepLine.replaceChildren(
      `At step ${step} (${trace.steps[step].phase}) `, el("b", { "data-testid": "explainer-live", "data-bytes": live, text: formatBytes(live) }),
      ` are alive${atPeak ? " — this is the peak." : `; the peak is ${formatBytes(trace.summary.peak_bytes)} at step ${trace.summary.peak_step}. `}`,
    );
    const recorded = trace.steps[step].recorded_backward_bytes;
    if (recorded) {
      stepLine.append(el("span", { class: "explainer-recorded", "data-testid": "explainer-recorded", "data-bytes": recorded,
        text: `${formatBytes(recorded)} of them are the first backward's intermediates saved for the second. ` }));
    }
    if (!atPeak) stepLine.append(goToPeak);
    const shown = groups.slice(0, SHOWN_GROUPS);
    const rest = groups.slice(SHOWN_GROUPS);
    const widest = Math.max(1, ...shown.map((g) => g.bytes));
    const items = shown.map((group) => showRow(rowFor(group), group, widest, live));
    if (rest.length) {
      const bytes = rest.reduce((sum, g) => sum + g.bytes, 0);
      setAttribute(restItem, "data-bytes", String(bytes));
      setText(restItem, `${rest.length} more groups: ${formatBytes(bytes)}`);
      items.push(restItem);
    }
    if (items.length !== bars.children.length || items.some((item, i) => bars.children[i] !== item)) bars.replaceChildren(...items);
  }

  function rowFor(group) {
    const key = `${group.layer}\u0000${group.kind}`;
    let row = rows.get(key);
    if (row) return row;
    const fill = el("span", { class: "fill" });
    const bytesText = el("span", { class: "group-bytes" });
    const button = el("button", { type: "button", class: "group", "data-layer": group.layer, "data-kind": group.kind },
      el("span", { class: "group-name", text: `${group.layer} · ${groupWords(group)}` }), el("span", { class: "group-bar" }, fill), bytesText);
    row = { item: el("li", {}, button), button, fill, bytesText, group };
    button.addEventListener("click", () => {
      const tensor = largest(row.group);
      if (tensor) onSelect(`t${tensor.id}`);
    });
    rows.set(key, row);
    return row;
  }

  function showRow(row, group, widest, live) {
    row.group = group;
    const share = live ? group.bytes / live : 0;
    setAttribute(row.button, "data-bytes", String(group.bytes));
    setAttribute(row.button, "title", `${group.tensorCount} tensor(s); click to select the largest`);
    setAttribute(row.fill, "style", `width:${(100 * group.bytes / widest).toFixed(1)}%;background:${KIND_COLORS[group.kind] ?? "#999"}`);
    setText(row.bytesText, `${formatBytes(group.bytes)} · ${percentText(share)}`);
    return row.item;
  }

  function resetLevers() {
    leverRequest?.abort();
    leverRequest = null;
    if (!current().spec) {           // a recorded run (an import, a file): no spec of ours to re-run
      leversBox.replaceChildren(el("p", { class: "hint", "data-testid": "levers-recorded", text: "A recorded run: the levers re-run our engine on a spec, which a recorded run does not have." }));
      return;
    }
    const known = leverReports.get(leverKey(current()));
    if (known) {                      // the same model as a run before (an undo, a redo): its levers, not a re-run
      leversBox.replaceChildren(leverTable(known), freezeComparison(known));
      return;
    }
    const find = el("button", { type: "button", "data-testid": "find-levers", text: "What would lower it?" });
    find.addEventListener("click", () => findLevers(find));
    leversBox.replaceChildren(find, el("span", { class: "hint", text: " runs every lever on the server: a few seconds" }));
  }

  async function findLevers(button) {
    const { spec, checkpoint } = current();
    if (!spec) return;
    const key = leverKey({ spec, checkpoint });
    button.disabled = true;
    button.textContent = "Running every lever…";
    leverRequest = new AbortController();
    try {
      const report = await requestLevers(spec, checkpoint, leverRequest.signal);
      keepReport(key, report);
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
