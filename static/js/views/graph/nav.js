// nav.js — moving around the recorded graph: zoom and pan (Ctrl/⌘ + wheel or a pinch zooms, a plain wheel
// scrolls the page, a drag pans), the fit / zoom in / zoom out / 1:1 buttons and their keys (f, +, −, 0), a smooth
// pan that keeps the player's node in view, and a minimap when the graph is bigger than the panel. A view nobody has
// moved since fit is fitted again when the panel changes size (the editor folded into its rail, a window resized).
// Legibility is the rule fit follows: a label is drawn only at a scale where it is at least 10 CSS px tall; below it
// the svg gets the "far" class (op glyph and colour only, the label in the node's title), and below the glyph's own
// threshold "farther" (colour only).
/* global d3 */

export const LABEL_SCALE = 0.85;    // an 11 px label is 10 CSS px tall on screen from here up
export const GLYPH_SCALE = 0.45;    // the 20 px op glyph is 10 CSS px tall from here up
const FIT_MAX_SCALE = 1.4;
const [MIN_SCALE, MAX_SCALE] = [0.02, 4];
const STEP_FACTOR = 1.25;           // one button press or key
const PAN_MS = 350;
const REDUCED_MOTION = window.matchMedia?.("(prefers-reduced-motion: reduce)");   // live: follows the setting
const FOLLOW_MARGIN = 60;
const FRAME_MARGIN = 12;            // layout px around the drawn boxes when Fit frames them
const TOOLS_HEIGHT = 34;            // the search box and zoom buttons over the panel's top, and a top node's saved-bytes badge above it (past the layout's own margin)
const WHOLE_MAX_NODES = 60;         // a graph this small shown whole stays put while playing
const READABLE_MAX_NODES = 500;     // up to this many nodes (or a graph under 4,000 px) fit keeps labels legible
const MINIMAP_WIDTH = 180;
const MINIMAP_MAX_HEIGHT = 90;
const MINIMAP_MIN_HEIGHT = 40;

/** Ctrl/⌘ + wheel (and a trackpad pinch, which the browser reports as one) zooms; a notch is about 1.25×. */
function wheelDelta(event) {
  const pixels = event.deltaY * (event.deltaMode === 1 ? 20 : event.deltaMode ? 400 : 1);
  return -pixels * (Math.abs(pixels) < 40 ? 0.01 : 0.003);
}

/** Which pointer and wheel events the zoom takes: a wheel only with Ctrl or ⌘ (the page scrolls otherwise). */
function zoomFilter(event) {
  if (event.type === "wheel") return event.ctrlKey || event.metaKey;
  if (event.type === "dblclick") return false;
  return !event.ctrlKey && !event.button;
}

/**
 * svgElement: the graph; viewport: the <g> that carries the transform; controls: {fit, zoomIn, zoomOut, reset,
 * minimap} elements (any may be missing), onZoom({k, x, y}), told where each zoom or pan of a person's ended (the
 * workspace saves it), and onSettle({x0, y0, x1, y1}), told what part of the layout is in view after every move.
 * Returns the navigator the graph view drives.
 */

/** The drawn boxes' bounding box ({x0, y0, x1, y1}, layout px; the layout's own size when there are none) and the
 * box the drawing starts at (the leftmost, the topmost of those). */
function extentOf(boxes, size) {
  if (!boxes?.length) return { bounds: { x0: 0, y0: 0, x1: size.width, y1: size.height }, start: { x: 0, y: size.height / 2, width: 0 } };
  let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
  let start = boxes[0];
  for (const b of boxes) {
    x0 = Math.min(x0, b.x - b.width / 2); x1 = Math.max(x1, b.x + b.width / 2);
    y0 = Math.min(y0, b.y - b.height / 2); y1 = Math.max(y1, b.y + b.height / 2);
    if (b.x - b.width / 2 < start.x - start.width / 2 - 0.5 || (Math.abs(b.x - b.width / 2 - (start.x - start.width / 2)) <= 0.5 && b.y < start.y)) start = b;
  }
  return { bounds: { x0, y0, x1, y1 }, start };
}

export function createNavigator(svgElement, viewport, controls = {}) {
  const svg = d3.select(svgElement);
  let graph = null;       // {width, height, nodeCount, positions}
  let panelBox = null;    // kept by a ResizeObserver so following the cursor never forces a layout mid-step
  const minimap = controls.minimap ? createMinimap(controls.minimap, (x, y) => svg.call(zoom.translateTo, x, y)) : null;

  // A move interpolates the transform directly: d3's default (interpolateZoom) flies a long pan out and back in, so
  // a pan cut short by the next step or a relayout was left zoomed out, below the label threshold.
  const zoom = d3.zoom().scaleExtent([MIN_SCALE, MAX_SCALE]).filter(zoomFilter).wheelDelta(wheelDelta).interpolate(d3.interpolate).on("zoom", (event) => {
    const { k } = event.transform;
    viewport.attr("transform", event.transform);
    svgElement.classList.toggle("far", k < LABEL_SCALE);
    svgElement.classList.toggle("farther", k < GLYPH_SCALE);
    svgElement.dataset.scale = k.toFixed(3);
    if (minimap && graph) minimap.view(event.transform, box());
  }).on("end", (event) => {
    controls.onSettle?.(visibleRect(event.transform));
    // Only a person's moves are worth saving (a drag, a wheel, a button or key), not a fit on load or the follow pan.
    if (!event.sourceEvent && !asked) return;
    if (event.sourceEvent) refit = null;
    asked = false;
    const { k, x, y } = event.transform;
    controls.onZoom?.({ k: Number(k.toFixed(4)), x: Math.round(x), y: Math.round(y) });
  });
  let asked = false;   // the running move was asked for by a button, a key, a double-click or a search
  let refit = null;    // the view is fit's own (nothing moved it since): a panel that changes size gets it again
  svg.call(zoom);
  if (typeof ResizeObserver === "function") {
    new ResizeObserver(() => {
      const before = panelBox;
      panelBox = svgElement.getBoundingClientRect();
      const resized = before && (before.width !== panelBox.width || before.height !== panelBox.height);
      if (resized && refit && graph) moveTo(refit(), true);
    }).observe(svgElement);
  }
  const box = () => panelBox ?? svgElement.getBoundingClientRect();
  /** Whether any of a node's box (layout coordinates, centred at x, y) is in the panel under `transform`. */
  function inView(transform, { x, y, width: w, height: h }) {
    const { width, height } = box();
    const [left, top] = transform.apply([x - w / 2, y - h / 2]);
    const [right, bottom] = transform.apply([x + w / 2, y + h / 2]);
    return right > 0 && left < width && bottom > 0 && top < height;
  }
  /** The part of the layout the panel shows under `transform`: {x0, y0, x1, y1} in layout coordinates. */
  const visibleRect = (transform) => {
    const { width, height } = box();
    const [[x0, y0], [x1, y1]] = [transform.invert([0, 0]), transform.invert([width, height])];
    return { x0, y0, x1, y1 };
  };

  let aim = null;   // where a running pan or zoom is headed: a second press zooms from there, not from midway

  /** Move to `transform`, smoothly unless `instant` or the visitor asks for reduced motion (their system setting);
   * data-panning is set while a move runs (tests wait on it). */
  function moveTo(transform, instant = false, ms = PAN_MS) {
    svg.interrupt();
    if (instant || REDUCED_MOTION?.matches) { svg.call(zoom.transform, transform); return; }
    aim = transform;
    svgElement.dataset.panning = "true";
    svg.transition().duration(ms).ease(d3.easeCubicOut).call(zoom.transform, transform)
      .on("end interrupt", () => { aim = null; delete svgElement.dataset.panning; });
  }

  /** Zoom about the panel's centre to scale k (clamped), from where any running move is headed. */
  function zoomAboutCentre(scaleFor) {
    const from = aim ?? d3.zoomTransform(svgElement);
    const { width, height } = box();
    const [x, y] = from.invert([width / 2, height / 2]);
    const k = Math.min(MAX_SCALE, Math.max(MIN_SCALE, scaleFor(from.k)));
    moveTo(d3.zoomIdentity.translate(width / 2 - x * k, height / 2 - y * k).scale(k), false, 200);
  }

  /** Fit (the button, the f key): the drawn boxes' real bounding box, both axes, centred under the tools, whatever
   * the layout's direction; as close as 1.4x for a small graph, and as far out as it takes for a big one. */
  function frameAll() {
    const { width, height } = box();
    const { x0, y0, x1, y1 } = graph.bounds;
    const k = Math.max(MIN_SCALE, Math.min(FIT_MAX_SCALE, scaleToFit({ width: x1 - x0 + 2 * FRAME_MARGIN, height: y1 - y0 + 2 * FRAME_MARGIN })));
    return d3.zoomIdentity.translate(width / 2 - ((x0 + x1) / 2) * k, TOOLS_HEIGHT + (height - TOOLS_HEIGHT) / 2 - ((y0 + y1) / 2) * k).scale(k);
  }

  /** The view a graph opens on: the whole of it when its labels stay legible there (or when it is thousands of nodes
   * wide, shown far out), else legible from where the drawing starts (its first box on the left, centred on it:
   * a layout that runs diagonally has nothing in its top left corner) — the minimap shows the rest. */
  function fitTransform() {
    const { height } = box();
    const whole = frameAll();
    const readable = whole.k < LABEL_SCALE && (graph.width < 4000 || graph.nodeCount <= READABLE_MAX_NODES);
    if (!readable) return whole;
    const start = graph.start;
    return d3.zoomIdentity.translate(10 + FRAME_MARGIN - (start.x - start.width / 2) * LABEL_SCALE,
      TOOLS_HEIGHT + (height - TOOLS_HEIGHT) / 2 - start.y * LABEL_SCALE).scale(LABEL_SCALE);
  }

  /** The scale at which a drawing of `size` ({width, height}) fits the panel whole, under its tools. */
  function scaleToFit(size) {
    const { width, height } = box();
    return Math.min(width / size.width, (height - TOOLS_HEIGHT) / size.height);
  }

  function centredOn(position, k) {
    const { width, height } = box();
    return d3.zoomIdentity.translate(width / 2 - position.x * k, height / 2 - position.y * k).scale(k);
  }

  const nav = {
    /** A newly drawn graph: remember its size and what is drawn (node `boxes` and open group `frames`, centred
     * {x, y, width, height}), draw the minimap; open on `saved` ({k, x, y}, a reload) or fit, or with `keep`
     * ({before, after}: one node's position in the old and the new layout) shift the view so that node stays where
     * it was on screen. */
    load(size, nodeCount, positions, boxes, keep = null, saved = null, frames = []) {
      graph = { ...size, nodeCount, positions, ...extentOf([...boxes, ...frames], size) };
      minimap?.draw(size, boxes);
      if (saved && [saved.k, saved.x, saved.y].every(Number.isFinite)) {
        refit = null;
        moveTo(d3.zoomIdentity.translate(saved.x, saved.y).scale(Math.min(MAX_SCALE, Math.max(MIN_SCALE, saved.k))), true);
        return;
      }
      refit = keep ? null : fitTransform;
      if (!keep) { moveTo(fitTransform(), true); return; }
      const transform = d3.zoomTransform(svgElement);
      const shift = keep.before && keep.after ? [keep.before.x - keep.after.x, keep.before.y - keep.after.y] : [0, 0];
      const kept = transform.translate(...shift);
      // A relayout never leaves the panel empty: with no node in view (nothing anchored it, e.g. at an optimizer
      // step the player folded the groups back), the new drawing is fitted instead.
      if (!boxes.some((b) => inView(kept, b))) { refit = fitTransform; moveTo(fitTransform(), true); return; }
      moveTo(kept, true);
    },
    scaleToFit,
    fit: (instant = false) => { asked = true; refit = frameAll; return graph && moveTo(frameAll(), instant); },
    zoomBy: (factor) => { asked = true; refit = null; zoomAboutCentre((k) => k * factor); },
    actualSize: () => { asked = true; refit = null; zoomAboutCentre(() => 1); },
    /** Centre a node, zoomed in to at least 1:1 (double-click, search). */
    zoomToNode(nodeId) {
      const position = graph?.positions[nodeId];
      if (!position) return;
      asked = true;
      refit = null;
      moveTo(centredOn(position, Math.max(1.2, d3.zoomTransform(svgElement).k)));
    },
    /** Keep the player's node in view with a smooth pan; a small graph shown whole stays put. `instant` on load. */
    follow(nodeId, instant = false) {
      const position = graph?.positions[nodeId];
      if (!position) return;
      // In view where the view is headed: a pan still running (to the step before) would carry the node off screen.
      const transform = aim ?? d3.zoomTransform(svgElement);
      const { width, height } = box();
      const [left, top] = transform.apply([0, 0]);
      const [right, bottom] = transform.apply([graph.width, graph.height]);
      const whole = left >= -1 && top >= -1 && right <= width + 1 && bottom <= height + 1;
      if (whole && graph.nodeCount <= WHOLE_MAX_NODES) return;
      minimap?.current(position);
      const [x, y] = transform.apply([position.x, position.y]);
      if (x > FOLLOW_MARGIN && x < width - FOLLOW_MARGIN && y > FOLLOW_MARGIN && y < height - FOLLOW_MARGIN) return;
      refit = null;
      moveTo(centredOn(position, transform.k), instant);
    },
  };

  controls.fit?.addEventListener("click", () => nav.fit());
  controls.zoomIn?.addEventListener("click", () => nav.zoomBy(STEP_FACTOR));
  controls.zoomOut?.addEventListener("click", () => nav.zoomBy(1 / STEP_FACTOR));
  controls.reset?.addEventListener("click", () => nav.actualSize());
  const keys = { f: () => nav.fit(), "+": () => nav.zoomBy(STEP_FACTOR), "=": () => nav.zoomBy(STEP_FACTOR),
    "-": () => nav.zoomBy(1 / STEP_FACTOR), "−": () => nav.zoomBy(1 / STEP_FACTOR), _: () => nav.zoomBy(1 / STEP_FACTOR),
    0: () => nav.actualSize() };
  svgElement.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const action = keys[event.key];
    if (!action) return;
    event.preventDefault();
    action();
  });
  return nav;
}

/** The whole graph in a corner: every node a speck, the visible part a rectangle; click or drag there to pan. */
function createMinimap(element, panTo) {
  const mini = d3.select(element);
  const nodes = mini.append("path").attr("class", "mini-nodes");
  const current = mini.append("circle").attr("class", "mini-current").attr("r", 3).attr("cx", -10);
  const view = mini.append("rect").attr("class", "mini-view");
  let [sx, sy] = [1, 1];   // a long, flat graph is stretched vertically: a 12 px sliver would be no map at all
  let size = null;
  let drawn = null;        // the drawn boxes' extent: in view whole, the map has nothing to add
  const toGraph = (event) => {
    const [x, y] = d3.pointer(event, element);
    return [x / sx, y / sy];
  };
  element.addEventListener("pointerdown", (event) => {
    element.setPointerCapture?.(event.pointerId);
    panTo(...toGraph(event));
  });
  element.addEventListener("pointermove", (event) => { if (event.buttons) panTo(...toGraph(event)); });
  return {
    draw(graphSize, boxes) {
      size = graphSize;
      drawn = extentOf(boxes, graphSize).bounds;
      const scale = Math.min(MINIMAP_WIDTH / size.width, MINIMAP_MAX_HEIGHT / size.height);
      [sx, sy] = [scale, Math.max(scale, Math.min(MINIMAP_MIN_HEIGHT, MINIMAP_MAX_HEIGHT) / size.height)];
      const [width, height] = [Math.max(24, size.width * sx), size.height * sy];
      mini.attr("width", width).attr("height", height).attr("viewBox", `0 0 ${width} ${height}`);
      // One path for every node: cheap at 5,000 nodes.
      nodes.attr("d", boxes.map((b) => {
        const w = Math.max(1, b.width * sx);
        const h = Math.max(1, b.height * sy);
        return `M${(b.x * sx - w / 2).toFixed(1)} ${(b.y * sy - h / 2).toFixed(1)}h${w.toFixed(1)}v${h.toFixed(1)}h${(-w).toFixed(1)}z`;
      }).join(""));
    },
    /** The visible part of the graph as a rectangle; the minimap hides itself when the whole graph is in view. */
    view(transform, panel) {
      if (!size) return;
      const [x0, y0] = transform.invert([0, 0]);
      const [x1, y1] = transform.invert([panel.width, panel.height]);
      const whole = x0 <= drawn.x0 + 1 && y0 <= drawn.y0 + 1 && x1 >= drawn.x1 - 1 && y1 >= drawn.y1 - 1;
      element.classList.toggle("whole", whole);
      view.attr("x", x0 * sx).attr("y", y0 * sy).attr("width", (x1 - x0) * sx).attr("height", (y1 - y0) * sy);
    },
    current(position) { current.attr("cx", position.x * sx).attr("cy", position.y * sy); },
  };
}
