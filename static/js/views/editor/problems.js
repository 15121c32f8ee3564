// Problems from the server (400 {problems:[{path,message}], problem_count}, 413 {cap,limit,requested}) written at their fields:
// each as a data-testid="field-error" element after the field whose data-field is the path, or the nearest
// enclosing one ("layers[3].out" -> "layers[3]" -> "layers"), else in the panel's general area.
import { formatBytes, formatCount as count } from "../../lib/format.js";


/** The 413 sentence: which cap, what was asked and by how much it is over. */
export function capMessage(body) {
  const bytes = /bytes/.test(body.cap ?? "");
  const show = bytes ? formatBytes : count;
  const { limit, requested } = body;
  if (!Number.isFinite(limit) || !Number.isFinite(requested)) return body.error ?? "over a size cap";
  return `over the ${body.cap} cap: needs ${show(requested)}, the cap is ${show(limit)} — ` +
    `${show(requested - limit)} over (${(requested / limit).toFixed(1)}×)`;
}

/** Turn a failed trace answer into [{path, message}]. */
export function problemsOf(result) {
  const { status, body } = result;
  if (status === 413) return [{ path: body.problems?.[0]?.path ?? "spec", message: capMessage(body) }];
  if (Array.isArray(body?.problems) && body.problems.length) {
    const unlisted = (body.problem_count ?? 0) - body.problems.length;   // the server lists the first 50
    if (unlisted <= 0) return body.problems;
    return [...body.problems, { path: "spec", message: `and ${count(unlisted)} more problems like these` }];
  }
  return [{ path: "spec", message: body?.error ?? `the server answered ${status}` }];
}

function parentPath(path) {
  const m = /^(.*?)(\.[A-Za-z_]\w*|\[\d+\])$/.exec(path);
  return m ? m[1] : null;
}

function fieldFor(root, path) {
  for (let p = path; p; p = parentPath(p)) {
    const field = root.querySelector(`[data-field="${CSS.escape(p)}"]`);
    if (field) return field;
  }
  return null;
}

function errorNode(problem) {
  const node = document.createElement("p");
  node.className = "field-error";
  node.dataset.testid = "field-error";
  node.dataset.problemPath = problem.path;
  node.setAttribute("role", "alert");
  const path = document.createElement("code");
  path.textContent = problem.path;
  node.append(path, ` ${problem.message}`);
  return node;
}

export function clearProblems(root) {
  root.querySelectorAll(".field-error").forEach((n) => n.remove());
  root.querySelectorAll("[aria-invalid]").forEach((n) => n.removeAttribute("aria-invalid"));
}

/** Show each problem at its field inside `form`, or in `general`. */
export function showProblems(form, general, problems) {
  for (const problem of problems) {
    const field = fieldFor(form, problem.path);
    const node = errorNode(problem);
    if (!field) { general.append(node); continue; }
    field.querySelector(":scope > input, :scope > select")?.setAttribute("aria-invalid", "true");
    if (field.tagName === "LI") field.querySelector(":scope > .layer-head").after(node);
    else if (field.classList.contains("layer-list")) field.prepend(node);
    else field.after(node);
  }
}
