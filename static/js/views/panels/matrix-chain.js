// matrix-chain.js — the matrix-chain lesson: pick widths n0…n3 and see the multiply-adds of J = A3·A2·A1 grouped from
// the input (forward mode, JVPs) and from the output (reverse mode, VJPs), counted by the server (POST
// /api/matrix-chain), the reverse grouping highlighted, and the same chain executed at small widths with the FLOPs
// the engine measured. It does not depend on the model on screen; it is first counted when it comes into view.
// Its request is the panel's own, the one view that calls api.js itself: the widths are typed here, are no part of the
// workspace (never saved, undone or shared) and its answer is only this panel's, so the store has nothing to hold.
import { fetchMatrixChain } from "../../state/api.js";
import * as workspace from "../../state/workspace.js";
import { el } from "../../lib/dom.js";
import { formatCount as count } from "../../lib/format.js";

const DEFAULT_WIDTHS = [4096, 4096, 4096, 1];
// The server's cap (backend/models/caps.py), from GET /api/schema, which the page loads at start; until then the
// server alone judges a width.
const maxWidth = () => workspace.state.schema?.caps.chain_width ?? Infinity;
const DELAY_MS = 250;

export function createMatrixChain(section) {
  const byTestId = (id) => section.querySelector(`[data-testid="${id}"]`);
  const inputs = [...section.querySelectorAll("input.chain-width")];
  const executed = section.querySelector(".chain-executed");
  const status = section.querySelector(".chain-status");
  let timer = null;
  let controller = null;

  inputs.forEach((input, i) => {
    input.value = String(DEFAULT_WIDTHS[i]);
    input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(run, DELAY_MS); });
  });

  function widths() {
    inputs.forEach((input) => { if (Number.isFinite(maxWidth())) input.max = String(maxWidth()); });
    const values = inputs.map((input) => Number(input.value));
    const bad = values.findIndex((n) => !Number.isInteger(n) || n < 1 || n > maxWidth());
    return bad === -1 ? { values } : { bad };
  }

  async function run() {
    const { values, bad } = widths();
    if (bad !== undefined) { status.textContent = `n${bad} must be a whole number from 1 to ${count(maxWidth())}.`; return; }
    controller?.abort();
    const mine = (controller = new AbortController());
    section.dataset.state = "running";
    try {
      show(await fetchMatrixChain(values, mine.signal));
      status.textContent = "";
      section.dataset.state = "ready";
    } catch (error) {
      if (error.name === "AbortError") return;
      status.textContent = `Could not count the chain: ${error.message}`;
      section.dataset.state = "failed";
    }
  }

  function show({ analytic, executed: small }) {
    const [n0, n1, n2, n3] = analytic.widths;
    byTestId("chain-reverse-cost").textContent = count(analytic.reverse);
    byTestId("chain-forward-cost").textContent = count(analytic.forward);
    section.querySelector(".chain-reverse-grouping").textContent = analytic.reverse_grouping;
    section.querySelector(".chain-forward-grouping").textContent = analytic.forward_grouping;
    section.querySelector(".chain-reverse-formula").textContent = `${count(n3)}·${count(n2)}·${count(n1)} + ${count(n3)}·${count(n1)}·${count(n0)}`;
    section.querySelector(".chain-forward-formula").textContent = `${count(n2)}·${count(n1)}·${count(n0)} + ${count(n3)}·${count(n2)}·${count(n0)}`;
    for (const order of ["forward", "reverse"]) {
      section.querySelector(`.chain-${order}`).classList.toggle("cheaper", analytic.cheaper === order);
    }
    const ratio = analytic.cheaper === "equal" ? "the same" : `${(Math.max(analytic.forward, analytic.reverse) / Math.min(analytic.forward, analytic.reverse)).toLocaleString("en-US", { maximumFractionDigits: 0 })}× fewer with ${analytic.cheaper} mode`;
    section.querySelector(".chain-ratio").textContent = `Same J, same matrices: ${ratio}.`;
    executed.replaceChildren(
      el("p", {}, `Executed by the engine at widths ${small.widths.map(count).join(" → ")} (each scaled down to at most 64):`),
      el("ul", {}, ["reverse", "forward"].map((order) => el("li", { "data-testid": `chain-executed-${order}` },
        `${small[order].grouping}: ${count(small[order].multiply_adds)} multiply-adds measured (${count(small[order].flops)} FLOPs by the engine's matmul counter; the count predicts ${count(small[order].analytic_multiply_adds)})`))),
      el("p", { class: "hint", text: `Both orders give the same J (largest difference ${small.max_abs_difference.toExponential(1)}).` }));
  }

  // Counted once the panel is first in view: the page's opening trace goes to the engine first.
  const observer = new IntersectionObserver((seen) => {
    if (seen.some((s) => s.isIntersecting)) { observer.disconnect(); run(); }
  });
  observer.observe(section);
  return { run };
}
