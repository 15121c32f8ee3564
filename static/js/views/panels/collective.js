// collective.js — a collective tape entry (family collective: an all-reduce, all-gather, reduce-scatter, broadcast of
// torch.distributed, recorded on this rank): what it moves, between which ranks, into which buffers, and what ran
// while it was in flight (an asynchronous one is two entries, issued and waited: the steps between them overlap it).
// The sweep panel shows it at the collective's step, the inspector when its node is selected.
import { el, facts } from "../../lib/dom.js";
import { exactBytes, formatBytes } from "../../lib/format.js";

const OVERLAP_LISTED = 6;      // the entries named of those that ran in flight; the rest are counted

export const isCollective = (entry) => entry?.family === "collective" && Boolean(entry.collective);

/** An async collective's flight: its issue and wait entries, their steps and the entries run between them (in step
 * order, each once), or null for one waited before it returned. */
export function inFlight(index, entry) {
  const collective = entry.collective;
  if (collective.event === "completed") return null;
  const issued = collective.event === "waited" ? collective.issued_in : entry.index;
  const waited = collective.event === "waited" ? entry.index : collective.waited_in;
  const from = index.recordedAt.get(issued);
  const to = index.recordedAt.get(waited);
  if (from === undefined || to === undefined) return null;
  const entries = new Set();
  for (let step = from + 1; step < to; step += 1) {
    const ran = index.trace.steps[step].entry;
    if (ran !== null && ran !== undefined) entries.add(ran);
  }
  return { issued, waited, from, to, entries: [...entries] };
}

function entryChip(index, entryIndex) {
  const entry = index.trace.tape[entryIndex];
  return el("span", { class: "chip", "data-select": `e${entryIndex}`, role: "button", tabindex: 0, title: "select this entry",
    text: `${entry.op} (entry ${entryIndex}${entry.scope ? ` · ${entry.scope}` : ""})` });
}

/** What ran while it was in flight, or that nothing could. */
function overlap(index, entry) {
  const flight = inFlight(index, entry);
  if (!flight) return el("span", { text: "nothing: it was waited for before it returned (async_op=False), so the rank waited with it" });
  const { entries, from, to } = flight;
  if (!entries.length) return el("span", { text: `nothing: issued at step ${from}, waited at step ${to}` });
  const collectives = entries.filter((e) => isCollective(index.trace.tape[e])).length;
  const listed = entries.slice(0, OVERLAP_LISTED).map((e) => entryChip(index, e));
  const more = entries.length > OVERLAP_LISTED ? ` and ${entries.length - OVERLAP_LISTED} more` : "";
  return el("span", {}, `steps ${from + 1}–${to - 1} (issued at step ${from}, waited at step ${to}): ${entries.length} entries ran `
    + `while it was in flight${collectives ? `, ${collectives} of them collectives` : ""}: `, listed, more);
}

/** "storage 411 (comm_buffer, 194 KiB)": a buffer the collective wrote, with its sharding role when it has one. */
function bufferWords(index, id) {
  const storage = index.trace.storages.find((s) => s.id === id);
  if (!storage) return `storage ${id}`;
  return `storage ${id} (${storage.shard_role ?? storage.kind}, ${formatBytes(storage.nbytes)})`;
}

/** The facts of collective `entry`: its op and event, the group, bytes in and out, buffers, and its overlap. */
export function collectiveBlock(index, entry) {
  const c = entry.collective;
  const half = { issued: "issued (asynchronous: it returns at once, a later entry waits for it)",
    waited: `waited for (issued at entry ${c.issued_in})`, completed: "completed (waited for before it returned)" }[c.event] ?? c.event;
  const rows = [
    ["collective", `${c.op} · ${half}`],
    ["group", `ranks ${(c.group ?? []).join(", ")}`],
    ["bytes in", exactBytes(c.bytes_in)],
    ["bytes out", exactBytes(c.bytes_out)],
    ["buffers", c.buffers?.length ? c.buffers.map((id) => bufferWords(index, id)).join(", ") : "none"],
    ["allocates", c.allocated_bytes ? exactBytes(c.allocated_bytes) : "nothing of its own (it writes into buffers that exist)"],
  ];
  if (c.bucket !== undefined) {
    rows.push(["DDP bucket", `bucket ${c.bucket}: ${c.gradients?.length ?? 0} gradients (${(c.gradients ?? []).join(", ")})`]);
    if (c.ready) rows.push(["ready at launch", `${c.ready.length} gradients were ready when it launched`]);
  }
  if (c.fsdp_unit) rows.push(["FSDP unit", c.fsdp_unit]);
  rows.push(["overlaps", overlap(index, entry)]);
  return el("div", { class: "collective", "data-testid": "collective", "data-op": c.op, "data-event": c.event,
    "data-bytes-in": c.bytes_in, "data-bytes-out": c.bytes_out },
  el("p", { "data-testid": "collective-moves" }, `${c.op} over ranks ${(c.group ?? []).join(", ")}: `
    + `${formatBytes(c.bytes_in)} in, ${formatBytes(c.bytes_out)} out on this rank.`),
  facts(rows));
}
