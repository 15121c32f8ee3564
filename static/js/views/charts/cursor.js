// cursor.js — a vertical step cursor drawn over a Plotly chart as a plain element, so moving it never redraws the plot.
// The plot's offset and plot area are measured only when Plotly redraws or the chart resizes: moving the cursor on
// every step then writes one transform and never forces a style/layout pass.

export function createChartCursor(plotElement, className = "chart-cursor") {
  const line = document.createElement("div");
  line.className = className;
  line.setAttribute("aria-hidden", "true");
  plotElement.parentElement.append(line);
  let current = null;
  let origin = null; // {left, top} of the plot element inside its parent, or null until measured

  function draw() {
    const layout = plotElement._fullLayout; // Plotly's computed layout: the axis maps data x to pixels
    if (current === null || !layout || !layout.xaxis || !layout.xaxis.l2p) return;
    if (!origin) measure();
    line.style.transform = `translateX(${origin.left + layout._size.l + layout.xaxis.l2p(current)}px)`;
  }

  function measure() {
    origin = { left: plotElement.offsetLeft, top: plotElement.offsetTop };
    const layout = plotElement._fullLayout;
    if (!layout || !layout._size) return;
    line.style.top = `${origin.top + layout._size.t}px`;
    line.style.height = `${layout._size.h}px`;
  }

  /** After a redraw or a resize: measure again, then draw. */
  function place() {
    origin = null;
    draw();
  }

  if (typeof ResizeObserver === "function") new ResizeObserver(place).observe(plotElement);

  return {
    element: line,
    move(x) { current = x; draw(); },
    place,
  };
}
