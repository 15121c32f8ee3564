// recompute-pick.js — manual recomputation: which tensor a selected node stands for, and whether it may be
// recomputed instead of saved. The rule is the backend's (backend/trace/recompute.py): every forward tape entry
// carries {recompute: {ok, reason}} for its output; this module only maps a selection to that entry.

/** For a selection ("e18" an op node, "t61" a tensor): {tensor, label, ok, reason}, or null when nothing is selected. */
export function recomputeChoice(selection, index) {
  if (!selection || !index) return null;
  const number = Number(selection.slice(1));
  let tensor = selection[0] === "e" ? index.tensor(index.trace.tape[number]?.output) : index.tensor(number);
  if (selection[0] === "e" && !tensor) return { tensor: null, ok: false, reason: "this entry has no output tensor" };
  if (tensor && tensor.recompute_of !== undefined && tensor.recompute_of !== null) tensor = index.tensor(tensor.recompute_of) ?? tensor;
  if (!tensor) return null;
  const refuse = (reason) => ({ tensor: tensor.id, label: tensor.name, ok: false, reason });
  if (tensor.produced_by === null) return refuse(`${tensor.name} is ${tensor.kind === "param" ? "a parameter" : `an ${tensor.kind}`}, a leaf: there is no op to re-run`);
  const entry = index.trace.tape[tensor.produced_by];
  const label = `${tensor.name} · ${entry.op}${entry.scope ? ` · ${entry.scope}` : ""}`;
  const no = (reason) => ({ tensor: tensor.id, label, ok: false, reason });
  if (entry.output !== tensor.id) return no(`a mask or statistic ${entry.op} keeps beside its output: pick the op's output instead`);
  if (entry.phase !== "forward" || !entry.recompute) return no("made by a recompute, not by the forward pass");
  return entry.recompute.ok ? { tensor: tensor.id, label, ok: true, reason: "" } : no(entry.recompute.reason);
}

/** A chip's text for tensor `id` in a trace (its name, op and scope), or "tensor id" when the trace lacks it. */
export function recomputeLabel(id, index) {
  const choice = index ? recomputeChoice(`t${id}`, index) : null;
  return choice?.label ?? `tensor ${id}`;
}
