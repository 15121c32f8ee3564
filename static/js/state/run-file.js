// run-file.js — a run.json opened in the browser, from the file picker or dropped anywhere on the page: read and
// parsed here (JSON.parse only, nothing evaluated), checked for the trace document's shape, and handed on. Nothing
// is uploaded; the server checks every figure only if the person clicks "Share this run". A run of many ranks
// ({"world_size": N, "ranks": [document, ...]}, what --nproc and torchrun write) is checked rank by rank.

export const MAX_RUN_FILE_BYTES = 64 * 1024 * 1024;
// What each schema_version must hold (a version 2 document may leave out the graph: the reader derives it).
const REQUIRED = { 1: ["tensors", "storages", "tape", "steps", "sweep", "graph", "summary"],
  2: ["tensors", "storages", "tape", "steps", "sweep", "summary"] };

/** The document in `text`, or an Error whose message says what is wrong with the file. */
export function parseRunDocument(text) {
  let document;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new Error(`it is not JSON (${error.message})`);
  }
  if (document && typeof document === "object" && "ranks" in document && document.schema_version === undefined) {
    return checkRanks(document);
  }
  return checkDocument(document);
}

/** A run of many ranks: every rank's document, in rank order, each a trace document. */
function checkRanks(run) {
  if (!Array.isArray(run.ranks) || !run.ranks.length) throw new Error("its ranks is not a list of every rank's trace document");
  if (run.world_size !== run.ranks.length) throw new Error(`it holds ${run.ranks.length} ranks' documents for a world_size of ${JSON.stringify(run.world_size)}`);
  run.ranks.forEach((document, rank) => {
    try { checkDocument(document); } catch (error) { throw new Error(`rank ${rank}'s document: ${error.message}`); }
  });
  return run;
}

function checkDocument(document) {
  if (!document || typeof document !== "object" || Array.isArray(document)) throw new Error("it is not a trace document (a JSON object)");
  const required = REQUIRED[document.schema_version];
  if (!required && document?.schema_version === undefined) {
    throw new Error("it is not a trace document (it has no schema_version). Write one with "
      + "python -m backend.importers.torch MODEL_FILE --out run.json, or open a run.json someone shared");
  }
  if (!required) throw new Error(`it is a trace document of version ${JSON.stringify(document.schema_version)}, and this page reads versions 1 and 2`);
  const missing = required.filter((key) => document[key] === undefined);
  if (missing.length) throw new Error(`it has no ${missing.join(", ")}: not a trace document`);
  const steps = document.schema_version === 1 ? document.steps : document.steps.count;
  if (!(Array.isArray(steps) ? steps.length : steps)) throw new Error("it has no steps");
  return document;
}

async function readRunFile(file) {
  if (file.size > MAX_RUN_FILE_BYTES) throw new Error(`it is ${(file.size / 2 ** 20).toFixed(1)} MiB; the limit is ${MAX_RUN_FILE_BYTES / 2 ** 20} MiB`);
  return parseRunDocument(await file.text());
}

/** input: the <input type=file>; zone: the drop target's label (highlighted while a file is dragged over the page).
 * onDocument(document, fileName) gets each good file; onError(sentence) each bad one. */
export function bindRunFile({ input, zone }, { onDocument, onError }) {
  async function open(file) {
    if (!file) return;
    try {
      onDocument(await readRunFile(file), file.name);
    } catch (error) {
      onError(`Could not open ${file.name}: ${error.message}.`);
    }
  }
  input.addEventListener("change", () => { open(input.files?.[0]); input.value = ""; });
  const carriesFiles = (event) => [...(event.dataTransfer?.types ?? [])].includes("Files");
  document.addEventListener("dragover", (event) => {
    if (!carriesFiles(event)) return;
    event.preventDefault();                       // without it the browser opens the file itself
    event.dataTransfer.dropEffect = "copy";
    zone.classList.add("dragging");
  });
  document.addEventListener("dragleave", (event) => { if (!event.relatedTarget) zone.classList.remove("dragging"); });
  document.addEventListener("drop", (event) => {
    if (!carriesFiles(event)) return;
    event.preventDefault();
    zone.classList.remove("dragging");
    open(event.dataTransfer.files?.[0]);
  });
}
