// recompute-pick.js — manual recomputation: which tensor a selected node stands for, and whether it may be
// recomputed instead of saved (mirrors backend/planner/selective.py's recomputable(): an op's own output, an
// activation that is not a view, not a fused op's, with its storage its own, and saved by some entry).
const RECOMPUTABLE_FAMILIES = new Set(["elementwise", "binary", "reduce", "random", "matmul", "movement", "normalization"]);

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
  if (entry.phase !== "forward") return no("made by a recompute, not by the forward pass");
  if (!RECOMPUTABLE_FAMILIES.has(entry.family)) return no(`${entry.op} (${entry.family}) is a fused op: its output cannot be re-derived on its own`);
  if (tensor.view) return no(`${entry.op} makes a view: it holds no memory of its own — pick the op output it came from`);
  if (tensor.kind !== "activation") return no(`${tensor.name} is ${tensor.kind === "input" ? "an input" : `a ${tensor.kind}`}, not an activation`);
  if (!tensor.saved_by.length && !tensor.recomputed_by?.length) return no("nothing saves this output for backward: there is nothing to trade");
  const shared = index.trace.tensors.some((t) => t.id !== tensor.id && t.storage === tensor.storage && t.saved_by?.length);
  if (shared) return no("a view of this output is saved too: its memory stays either way");
  return { tensor: tensor.id, label, ok: true, reason: "" };
}

/** A chip's text for tensor `id` in a trace (its name, op and scope), or "tensor id" when the trace lacks it. */
export function recomputeLabel(id, index) {
  const choice = index ? recomputeChoice(`t${id}`, index) : null;
  return choice?.label ?? `tensor ${id}`;
}
