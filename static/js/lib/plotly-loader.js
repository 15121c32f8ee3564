// plotly-loader.js — Plotly, run when a chart first needs it and after the page has painted: explorer.html prefetches
// the bundle without parsing or running it, because running it before the graph could start took a second when it
// was the full 4.8 MB build (the cartesian build the page has now still costs ~0.2 s of a first load's script); the
// graph and the player come first and the charts follow.

const PLOTLY_SRC = new URL("../../vendor/plotly.min.js", import.meta.url).href;   // the bundle of this page's version
const PAINT_WAIT_MS = 200;   // a page that gets no animation frames (a background tab) does not wait longer than this
let loading = null;

/** Resolve once the browser has painted what is on screen now. */
const afterPaint = () => new Promise((resolve) => {
  requestAnimationFrame(() => setTimeout(resolve, 0));
  setTimeout(resolve, PAINT_WAIT_MS);
});

function runBundle() {
  return new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = PLOTLY_SRC;
    script.onload = () => resolve(window.Plotly);
    script.onerror = () => { loading = null; reject(new Error("the charts' library (Plotly) could not be loaded")); };
    document.head.append(script);
  });
}

/** window.Plotly, running the bundle the first time it is asked for. */
export function loadPlotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  loading ??= afterPaint().then(runBundle);
  return loading;
}
