// on-screen.js — a chart plotted only once it is on screen, or about to be. Plotly's drawing is about a third of what
// the page spends showing a run, and at 1280×800 the memory and lifetime charts start below the first screen (at
// 1920×1080 the memory chart's top edge shows; the Pareto chart is further down): a run re-traced while the reader
// watches the graph need not pay for charts nobody sees. A chart keeps the latest plot it was asked for and makes it
// when its element comes within MARGIN_PX of the viewport (so it is drawn as the reader scrolls to it, not after).
// Its element says which it shows: data-drawn "true" once the latest plot is made, "false" while that plot waits,
// "failed" when it could not be made; a plot that fails once scrolled to (no caller waits for it then) is announced
// by a "plot-failed" event from the element, which bubbles to the page.

const MARGIN_PX = 48;

/** Whether `element` is laid out (not inside display:none or a closed <details>) and within MARGIN_PX of the viewport:
 * the IntersectionObserver's own test, read now (its first report comes a frame later). */
function nearViewport(element) {
  if (!element.getClientRects().length) return false;
  const box = element.getBoundingClientRect();
  return box.bottom >= -MARGIN_PX && box.top <= innerHeight + MARGIN_PX
    && box.right >= -MARGIN_PX && box.left <= innerWidth + MARGIN_PX;
}

/** plot(): a function that draws the chart (async). `request(plot)` makes it now when the element is near the viewport
 * (resolving once made), else when it gets there (resolving now); a plot asked for later replaces one still waiting. */
export function plottedOnScreen(element) {
  let waiting = null;                 // the latest plot asked for, not made yet
  let asked = 0;                      // plots asked for so far: only the latest one's end says what is shown
  let making = Promise.resolve();     // the plots being made, one after another

  function make() {
    const plot = waiting;
    const ticket = asked;
    waiting = null;
    making = making.catch(() => {}).then(plot).then(() => {
      if (ticket === asked) element.dataset.drawn = "true";
    }, (error) => {
      if (ticket === asked) element.dataset.drawn = "failed";
      throw error;
    });
    return making;
  }

  new IntersectionObserver((entries) => {
    if (!waiting || !entries.some((entry) => entry.isIntersecting)) return;
    make().catch((error) => element.dispatchEvent(new CustomEvent("plot-failed", { bubbles: true, detail: error })));
  }, { rootMargin: `${MARGIN_PX}px` }).observe(element);

  return {
    request(plot) {
      asked += 1;
      waiting = plot;
      element.dataset.drawn = "false";
      return nearViewport(element) ? make() : Promise.resolve();
    },
  };
}
