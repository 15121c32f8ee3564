// schedule-view.js — the checkpoint schedule on screen: the summary line, the loud gradient warning, the "Scale this
// model up" link, and the schedules of a trace traced without a checkpoint ("none" goes to the server bare, which is
// ~3× faster), fetched through the workspace's one request once editing pauses and filled into the Pareto panel when the same trace is still shown.
import { ledgerLink } from "../../model/scale-up.js";
import { NO_CHECKPOINT, gradMismatch, scheduleSummary } from "../../model/schedule.js";
import { subscribe, traceSchedules } from "../../state/workspace.js";

const SCHEDULES_AFTER_MS = 500;            // quiet time after a trace before the schedules are asked for
const AUTO_SCHEDULES_MAX_ENTRIES = 1000;   // above this, running every schedule waits for a click

/** root: the .explorer element; pareto: the Pareto panel; current(): {trace, checkpoint} on screen now. */
export function createScheduleView({ root, pareto, current }) {
  const byTestId = (id) => root.querySelector(`[data-testid="${id}"]`);
  let timer = null;

  function show(trace, spec) {
    const summary = byTestId("schedule-summary");
    summary.textContent = scheduleSummary(trace);
    summary.dataset.policy = trace.schedule?.policy ?? "";
    const mismatch = gradMismatch(trace.schedule);
    const warning = byTestId("grad-mismatch");
    warning.hidden = !mismatch;
    warning.textContent = mismatch ? `⚠ ${mismatch.text}` : "";
    summary.classList.toggle("mismatch", Boolean(mismatch));
    const link = byTestId("scale-up");
    const href = ledgerLink(spec);
    link.hidden = !href;
    if (href) link.href = href; else link.removeAttribute("href");
  }

  const cancel = () => clearTimeout(timer);

  async function fetchNow(trace, spec) {
    try {
      const preserve = current().checkpoint.preserve_rng_state !== false;
      const full = await traceSchedules(spec, { ...NO_CHECKPOINT, preserve_rng_state: preserve });
      if (!full || current().trace !== trace) return;
      Object.assign(trace, { schedule: full.schedule, schedules: full.schedules, pareto: full.pareto });
      await pareto.load(trace);
      show(trace, spec);
      root.dataset.schedules = "ready";
    } catch (error) {
      if (error.name === "AbortError") return;
      const refused = error.status === 400 && error.problems.find((p) => p.path === "checkpoint");
      if (refused) { unavailable(refused.message); return; }     // a document from before summary.plan_refusal
      root.dataset.schedules = "failed";
      pareto.waiting(`Could not run the schedules: ${error.message}`, () => fetchNow(trace, spec));
    }
  }

  /** reason: the planner's refusal, a predicate read after "checkpoint" (backend/planner/plannable.py). */
  function unavailable(reason) {
    root.dataset.schedules = "unavailable";
    pareto.waiting(`No checkpoint schedules: a checkpoint ${reason}.`);
  }

  /** A trace without schedules gets them a moment later (or on a click, for big traces); an `offline` one (a run
   * recorded elsewhere, or opened from a file) never: its spec is not sent; it shows only schedules it carries. */
  function fetchLater(trace, spec, { offline = false } = {}) {
    cancel();
    root.dataset.schedules = trace.schedules ? "ready" : offline ? "recorded" : "pending";
    if (trace.schedules) return;
    if (offline) {
      pareto.waiting("A recorded run: it shows the schedules recorded with it, and this one has none "
        + "(a torch run carries them when recorded with --checkpoint every_k=1, every_k=N or selective).");
      return;
    }
    // The server's own reason (summary.plan_refusal, the sentence its 400 would carry): do not ask for a plan it
    // refuses. A document without the field (an older snapshot) asks, and shows the 400's problem if refused.
    if (trace.summary.plan_refusal) {
      unavailable(trace.summary.plan_refusal);
      return;
    }
    if (trace.tape.length > AUTO_SCHEDULES_MAX_ENTRIES) {
      root.dataset.schedules = "on-demand";
      pareto.waiting(`${trace.tape.length.toLocaleString("en")} tape entries: each schedule is a full run of this model.`,
        () => fetchNow(trace, spec));
      return;
    }
    pareto.waiting("Running every schedule on this model…");
    timer = setTimeout(() => fetchNow(trace, spec), SCHEDULES_AFTER_MS);
  }

  // Another trace was asked for: the schedules of the one on screen would only hold the server up (the workspace
  // aborts a schedules request already in flight, since it is the one request).
  subscribe((kind) => { if (kind === "tracing") cancel(); });

  return { show, fetchLater };
}
