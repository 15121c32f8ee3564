// chart-cursor.js — a vertical step cursor drawn over a Plotly chart as a plain element, so moving it never redraws the plot.

export function createChartCursor(plotElement, className = "chart-cursor") {
  const line = document.createElement("div");
  line.className = className;
  line.setAttribute("aria-hidden", "true");
  plotElement.parentElement.append(line);
  let current = null;

  function place() {
    const layout = plotElement._fullLayout; // Plotly's computed layout: the axis maps data x to pixels
    if (current === null || !layout || !layout.xaxis || !layout.xaxis.l2p) return;
    const left = plotElement.offsetLeft + layout._size.l + layout.xaxis.l2p(current);
    line.style.transform = `translateX(${left}px)`;
    line.style.top = `${plotElement.offsetTop + layout._size.t}px`;
    line.style.height = `${layout._size.h}px`;
  }

  return {
    element: line,
    move(x) { current = x; place(); },
    place,
  };
}
