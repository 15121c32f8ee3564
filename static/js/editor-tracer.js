// Re-tracing a spec on the server: debounced for typing, throttled for sliders, the in-flight request aborted
// when a newer one starts, and only the newest answer delivered. The spec and its checkpoint request travel
// together: POST {"spec", "checkpoint"} (no checkpoint field for "none": see schedule.js wireRequest).
import { traceSpec } from "./api.js";
import { wireRequest } from "./schedule.js";

export function createTracer({ delay = 150, onPending, onResult }) {
  let timer = null;
  let pending = null;          // {spec, checkpoint, meta} waiting for the timer
  let controller = null;       // the in-flight request
  let generation = 0;
  let lastFire = -Infinity;

  async function fire() {
    timer = null;
    const { spec, checkpoint, meta } = pending;
    pending = null;
    lastFire = performance.now();
    controller?.abort();
    const mine = (controller = new AbortController());
    const id = ++generation;
    const started = performance.now();
    let result;
    try {
      const body = await traceSpec(spec, mine.signal, wireRequest(checkpoint));
      result = { ok: true, status: 200, body };
    } catch (error) {
      if (error.name === "AbortError") return;
      result = error.status
        ? { ok: false, status: error.status, body: { ...error.body, problems: error.problems } }
        : { ok: false, status: 0, body: { error: `could not reach the server: ${error.message}` } };
    }
    if (controller === mine) controller = null;
    if (id !== generation || pending) return;      // a newer request owns the screen
    onResult({ ...result, spec, checkpoint, meta, ms: performance.now() - started });
  }

  return {
    /** mode "debounce" waits for a pause; "throttle" fires at once when idle, then at most every `delay` ms. */
    request({ spec, checkpoint = null }, meta = {}, mode = "debounce") {
      pending = { spec, checkpoint, meta };
      generation++;                                  // answers to older specs are stale from now on
      onPending?.();
      if (mode === "now") {
        clearTimeout(timer);
        fire();
      } else if (mode === "throttle") {
        if (!timer) timer = setTimeout(fire, Math.max(0, lastFire + delay - performance.now()));
      } else {
        clearTimeout(timer);
        timer = setTimeout(fire, delay);
      }
    },
    busy: () => Boolean(timer || controller),
  };
}
