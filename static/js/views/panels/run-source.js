// run-source.js — a run recorded elsewhere, in the header: which model and torch version it came from (a document's
// `source`), and the controls such a run does without. An imported run has no spec our engine can re-trace, so the
// spec editor, Share (which re-traces a spec), Make a copy and the levers stand aside; a run opened from a file is
// shared by posting the document itself ("Share this run").
import { recordedElsewhere, runTitle } from "../../state/workspace.js";

/** "GPT · torch 2.13.0 · recorded with PyTorch's hooks", "... on fake tensors, rank 0 of 8 fake ranks", or "" for
 * a run of our own engine. */
export function describeSource(trace) {
  const source = trace?.source;
  if (source?.kind !== "torch") return "";
  const how = source.fake
    ? ` on fake tensors (shapes and bytes, no values)${source.fake.world_size > 1 ? `, rank 0 of ${source.fake.world_size} fake ranks` : ""}`
    : source.values ? "" : " (statistics only)";
  return `${source.model} · torch ${source.torch_version} · recorded with PyTorch's hooks${how}`;
}


/** Set the header and the controls for `trace`; `opened`: it came from a file in this browser (not a link). */
export function showRunSource(root, trace, { opened }) {
  const byTestId = (id) => root.querySelector(`[data-testid="${id}"]`);
  const label = byTestId("run-source");
  const words = describeSource(trace) || (opened ? `opened from a file: ${runTitle(trace)} · ${trace.engine_version}` : "");
  label.textContent = words;
  label.title = words ? `${words}. Read-only${opened ? ": Close run returns to your workspace and the presets" : ""}.` : "";
  label.hidden = !words;
  byTestId("model-origin").hidden = Boolean(words);     // the source says what the Model control would
  const elsewhere = recordedElsewhere(trace);
  root.classList.toggle("recorded-elsewhere", elsewhere);
  byTestId("share").hidden = opened || elsewhere;
  byTestId("share-run").hidden = !opened;
  if (elsewhere) byTestId("make-copy").hidden = true;
}
