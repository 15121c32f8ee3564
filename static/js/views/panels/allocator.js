// allocator.js — a run imported with --allocator: the replayed CUDA caching allocator's figures beside the peak (the
// reserved peak in the header's readouts, the summary over the memory chart), and why reserved sits above allocated.
// Hidden for a run without allocator data.
import { allocatorFigures, allocatorRows, RESERVED_WHY } from "../../model/allocator.js";
import { el } from "../../lib/dom.js";
import { formatBytes, formatCount } from "../../lib/format.js";

function figure({ key, value, bytes }) {
  return el("span", { class: "figure", "data-figure": key, "data-value": value,
    title: bytes ? `${formatCount(value)} bytes` : null, text: bytes ? formatBytes(value) : formatCount(value) });
}

/** Fill the header's reserved readout and the summary `box` from `trace`, or hide both. */
export function showAllocator(readout, box, trace) {
  const figures = allocatorFigures(trace);
  const output = readout.querySelector("output");
  readout.hidden = box.hidden = !figures;
  box.replaceChildren();
  output.dataset.bytes = figures ? String(figures.reservedPeakBytes) : "";
  output.textContent = figures ? formatBytes(figures.reservedPeakBytes) : "—";
  output.title = figures ? `${formatCount(figures.reservedPeakBytes)} bytes reserved at step ${figures.reservedPeakStep} `
    + "by PyTorch's CUDA caching allocator, replayed on this run's tensors: what the step needs from a GPU" : "";
  if (!figures) return;
  box.append(
    el("p", { class: "allocator-title" }, el("strong", { text: "On a GPU" }),
      ` — PyTorch's CUDA caching allocator, replayed on this run's tensors${figures.expandable ? ", expandable_segments on" : ""}:`),
    el("dl", { class: "allocator-figures" }, allocatorRows(figures).map((row) => el("div", {},
      el("dt", { text: row.label }), el("dd", {}, figure(row), el("span", { class: "hint", text: ` ${row.words}` }))))),
    el("p", { class: "hint allocator-why", text: RESERVED_WHY }),
  );
}
