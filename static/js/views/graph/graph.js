// graph.js — the tape as a layered DAG (left to right, or top to bottom in a narrow panel): laid out once, drawn with
// keyed D3 joins; stepping only restyles.
// Checkpointed runs: checkpoint entries are labelled with their block region; recompute entries (and, under
// op-level recomputation, the entries re-run in backward) wear a dashed outline and a "↻" badge; under the manual
// policy, nodes whose output is in the picked set (setPicked) are "picked", before the re-trace confirms them.
// The node and edge models are graph-model.js; moving around (fit, zoom, follow, minimap) is views/graph/nav.js; the search
// box's matches are views/graph/search.js; where frame names go, views/graph/frames.js; what is folded, and the layout of what is
// drawn, views/graph/fold.js; a folded group's progress through the sweep, graph-progress.js.
// Double backward: the entries the first backward recorded (create_graph) are a second tape, grouped under the
// scope "backward (recorded)"; while the cursor is in backward-2 they are highlighted ("recorded-backward").
// Nodes and their badges are drawn at absolute coordinates, never with a per-node transform: Chromium gives every
// transformed SVG group its own paint chunk, and re-layerizing ~10,000 chunks on every step was most of a frame.
/* global d3 */
import { formatBytes } from "../../lib/format.js";
import { carriedFold, createRelayoutQueue, foldAll, foldToSave, followCursor, layoutFolded, noteShown, openingFold, revealNode,
  savedFold, toggleFold } from "./fold.js";
import { frameLabels } from "./frames.js";
import { buildGroups } from "../../model/graph-groups.js";
import { groupProgress } from "../../model/graph-progress.js";
import { createNavigator } from "./nav.js";
import { createSearch } from "./search.js";
import { badgeTensors, CHAR_WIDTH, checkpointLinks, edgeWeight, nodeModels, nodeTitle } from "../../model/graph-model.js";
import { warmLayoutWorker } from "./layout.js";
import { familyColor } from "../../lib/palette.js";

const GROUP_HEIGHT = 30;
const FOLLOW_SETTLE_MS = 120;     // the folds follow the cursor once no step has come for this long

/** onSelect(nodeId); onFoldChange(unfolded) and onZoom({k, x, y}): the view the workspace saves; controls: the
 * toolbar's elements (views/graph/nav.js, views/graph/search.js, the fold-all button). */
export function createGraphView(svgElement, { onSelect, onFoldChange = null, onZoom = null, controls = {} }) {
  const svg = d3.select(svgElement);
  const viewport = svg.append("g").attr("class", "viewport");
  const groupLayer = viewport.append("g").attr("class", "groups");
  const edgeLayer = viewport.append("g").attr("class", "edges");
  const nodeLayer = viewport.append("g").attr("class", "nodes");
  const nav = createNavigator(svgElement, viewport, { ...controls, onZoom, onSettle: (view) => nameFrames(view) });
  warmLayoutWorker();
  const search = createSearch(controls, {
    nodes: () => (model ? model.nodes.concat(state?.nodes.filter((n) => n.isGroup) ?? []) : []),
    onMatches: () => { if (state) update(state.step ?? 0); },
    onGo: (nodeId) => reveal(nodeId).then(() => nav.zoomToNode(nodeId)),
  });

  let model = null; // the whole graph: {trace, index, nodes, edges, groups, badges, byId, fold (views/graph/fold.js)}
  let state = null; // what is drawn: {trace, index, nodes, edges, rep, nodeElements, edgeElements, badges, lastClass}
  let selected = null;   // the node drawn as selected: a selected tensor shows as the op that made it
  let picked = null;   // tensor ids in the manual recompute set, or null

  function draw(index, nodes, edges, layout) {
    const widthScale = d3.scaleLog()
      .domain(d3.extent(edges, (e) => Math.max(1, e.nbytes)).map((v, i) => (i ? v + 1 : v)))
      .range([1.2, 7]).clamp(true);
    const line = d3.line().curve(d3.curveBasis);
    const edgeSel = edgeLayer.selectAll("path.edge").data(edges, (e) => e.key)
      .join("path")
      .attr("class", "edge")
      .attr("d", (e, i) => line(layout.routes[i].map((p) => [p.x, p.y])))
      .attr("stroke-width", (e) => widthScale(Math.max(1, e.nbytes)))
      .attr("data-tensor", (e) => e.tensor);
    edgeSel.selectAll("title").data((e) => [e]).join("title")
      .text((e) => (e.link ? `checkpoint entry ${e.owner} re-runs its region from its saved input, detached as ${index.nameOf(e.tensor)}`
        : `${index.nameOf(e.tensor)} · ${formatBytes(e.nbytes)}`));

    const nodeSel = nodeLayer.selectAll("g.node").data(nodes, (n) => n.id)
      .join((enter) => {
        const g = enter.append("g");
        g.append("rect");
        g.append("text").attr("class", "label");
        g.append("text").attr("class", "glyph").attr("aria-hidden", "true");
        g.append("title");
        const badge = g.append("g").attr("class", "badge");
        badge.append("rect").attr("rx", 3);
        badge.append("text");
        return g;
      })
      .attr("data-node-id", (n) => (n.isOp ? n.entry : null))
      .attr("data-tensor-id", (n) => (n.isOp || n.isGroup ? null : n.tensor))
      .attr("data-group-id", (n) => (n.isGroup ? n.group.id : null))
      .attr("data-collapsed", (n) => (n.isGroup ? "true" : null))
      // A group is named by the words drawn on it, its label and the state line under it (rewritten each step), so
      // the name is what a speech-input user reads off the screen; its tooltip (what it holds, click to unfold)
      // describes it. An op or a leaf is named by its tooltip.
      .attr("aria-labelledby", (n, i) => (n.isGroup ? `node-label-${i} group-state-${i}` : null))
      .attr("aria-describedby", (n, i) => (n.isGroup ? `node-title-${i}` : null))
      .attr("tabindex", 0)
      .attr("role", "button")
      .on("click", (event, n) => (n.isGroup ? toggleGroup(n.group.id) : onSelect(n.id)))
      .on("dblclick", (event, n) => { event.preventDefault(); if (!n.isGroup) nav.zoomToNode(n.id); })
      .on("keydown", (event, n) => { if (event.key === "Enter") (n.isGroup ? toggleGroup(n.group.id) : onSelect(n.id)); });
    const at = (n) => layout.positions[n.id];
    nodeSel.select("rect")
      .attr("x", (n) => at(n).x - n.width / 2).attr("y", (n) => at(n).y - n.height / 2)
      .attr("width", (n) => n.width).attr("height", (n) => n.height)
      .attr("rx", (n) => (n.family === "collective" ? 0 : n.isOp ? 4 : n.isGroup ? 6 : n.height / 2))
      .attr("fill", (n) => (n.isOp ? familyColor(n.family) : null));
    nodeSel.select("text.label").attr("id", (n, i) => (n.isGroup ? `node-label-${i}` : null)).attr("x", (n) => at(n).x).attr("y", (n) => at(n).y).attr("dy", "0.35em").text((n) => n.label);
    nodeSel.select("text.glyph").attr("x", (n) => at(n).x).attr("y", (n) => at(n).y).attr("dy", "0.35em").text((n) => n.glyph);
    nodeSel.select("title").text((n) => (n.isGroup ? `${n.group.title} · click to unfold` : nodeTitle(n, index)))
      .attr("id", (n, i) => (n.isGroup ? `node-title-${i}` : null));
    // A folded group's progress through the run (graph-progress.js writes it each step), under its box.
    nodeSel.each(function placeStateLine(n, i) {
      const group = d3.select(this);
      if (!n.isGroup) { group.select("text.group-state").remove(); return; }
      const line = group.select("text.group-state").empty() ? group.append("text").attr("class", "group-state") : group.select("text.group-state");
      line.attr("id", `group-state-${i}`);
      line.attr("x", at(n).x).attr("y", at(n).y + n.height / 2 + 11);
    });
    nodeSel.each(function setRecomputeBadge(n) {
      const group = d3.select(this);
      group.select("g.recompute-badge").remove();
      if (!n.recompute) return;
      const [x, y] = [at(n).x - n.width / 2, at(n).y - n.height / 2];
      const badge = group.append("g").attr("class", "recompute-badge");
      badge.append("circle").attr("cx", x).attr("cy", y).attr("r", 7);
      badge.append("text").attr("x", x).attr("y", y).attr("dy", "0.35em").attr("aria-hidden", "true").text("↻");
    });
    return { nodeSel, edgeSel };
  }

  const layoutOptions = (index) => ({ height: GROUP_HEIGHT, charWidth: CHAR_WIDTH, weight: (target, link) => edgeWeight(index, target, link) });
  /** A new trace: `view` is the workspace's saved view ({unfolded, zoom, selected, step}) to open on, when it names
   * this graph. */
  async function load(trace, index, view = {}) {
    const nodes = nodeModels(trace, index);
    const edges = trace.graph.edges.concat(checkpointLinks(trace, index))
      .map((e, i) => ({ ...e, key: `${e.source}>${e.target}#${e.tensor}#${i}` }));
    const groups = buildGroups(nodes, index, trace.spec);
    const next = { trace, index, nodes, edges, groups, badges: badgeTensors(trace, index), byId: new Map(nodes.map((n) => [n.id, n])),
      // the groups holding ops of the recorded backward (a double backward's second tape): lit while backward-2 runs
      recordingGroups: new Set([...groups.values()].filter((g) => g.entries.some((entry) => index.recordedBackward.has(entry)))) };
    // A re-trace of the same model (an edit, a schedule) keeps what was folded and opened; new groups start folded.
    const sameModel = model?.fold && model.trace.spec?.name === trace.spec?.name && [...groups.keys()].some((id) => model.groups.has(id));
    const saved = sameModel ? carriedFold(model, groups) : unfoldedByPerson ? savedFold("all", groups) : savedFold(view.unfolded, groups);
    model = next;
    state = null;
    performance.mark("tapescope:layout-start");
    // A small graph opens plain (dagre's clusters would stretch it); a double backward's is framed from the start, so
    // its recorded backward reads as a second tape.
    const opened = await openingFold(next, { saved, scaleIn: nav.scaleToFit, layoutOptions: layoutOptions(index),
      framed: index.recordedBackward.size > 0 });
    if (model !== next) return;
    const { fold } = opened;
    // The nodes a saved view points at (a shared snapshot's, a reload's: its selected node and the op at its step) are
    // drawn themselves, not folded into a group: the sharer had them open, and a smaller panel may open a level up.
    const entry = view.step > 0 ? trace.steps[view.step]?.entry : null;
    const pointed = [view.selected && nodeFor(view.selected), entry !== null && entry !== undefined && `e${entry}`];
    const revealed = pointed.filter((id) => id && revealNode(fold, next.byId.get(id)));
    const laid = revealed.length ? await layoutFolded(next, fold, layoutOptions(index)) : opened.laid;
    if (model !== next) return;
    next.fold = fold;
    showFoldState();
    drawLaidOut(next, laid, { fit: !sameModel, zoom: sameModel ? null : view.zoom });
    performance.mark("tapescope:layout-done");
  }

  let unfoldedByPerson = false;   // "Unfold all" holds for the traces that follow (an edit does not fold it back)

  /** Lay out and draw what is unfolded now; the cursor's node keeps its place on screen (a fold or unfold moves the
   * drawing around it, not it). */
  const relayout = createRelayoutQueue(async () => {
    const mine = model;
    const anchorId = state ? state.rep.get(cursorId()) : null;
    const laid = await layoutFolded(mine, mine.fold, layoutOptions(mine.index));
    if (model === mine) drawLaidOut(mine, laid, { anchorId });
    onFoldChange?.(foldToSave(mine.fold, mine.groups));
  });

  function drawLaidOut(mine, { shown, openGroups, layout }, { fit = false, zoom = null, anchorId = null }) {
    const { trace, index, badges } = mine;
    const before = anchorId ? state?.positions[anchorId] : null;
    const { nodeSel, edgeSel } = draw(index, shown.nodes, shown.edges, layout);
    drawFrames(openGroups, layout.clusters ?? {});
    nodeSel.each(function setBadge(n) {
      const tensor = badges.get(n.id);
      const badge = d3.select(this).select("g.badge");
      if (!tensor) { badge.remove(); return; }
      const text = formatBytes(tensor.nbytes);
      const width = 10 + text.length * CHAR_WIDTH;
      const { x, y } = layout.positions[n.id];
      // The badge's centre: over the node's right end, or from its left end when wider than the node (a leaf), so it
      // never reaches back past the layout's margin.
      const cx = width > n.width ? x - n.width / 2 + width / 2 : x + n.width / 2 - width / 2 + 4;
      const cy = y - n.height / 2 - 9;
      badge.select("rect").attr("x", cx - width / 2).attr("y", cy - 7).attr("width", width).attr("height", 14);
      badge.select("text").attr("x", cx).attr("y", cy).attr("dy", "0.35em").text(text);
    });
    const step = state?.step;
    state = {
      trace, index, nodes: shown.nodes, edges: shown.edges, rep: shown.rep,
      nodeElements: nodeSel.nodes(), edgeElements: edgeSel.nodes(), progress: groupProgress(shown.nodes, index),
      badges, lastClass: new Map(), positions: layout.positions, size: { width: layout.width, height: layout.height }, step,
      recordingGroups: mine.recordingGroups,
    };
    const after = anchorId ? layout.positions[state.rep.get(cursorId())] : null;
    nav.load({ width: layout.width, height: layout.height, rankdir: layout.rankdir }, shown.nodes.length, layout.positions,
      shown.nodes.map((n) => ({ ...layout.positions[n.id], width: n.width, height: n.height })),
      fit ? null : { before, after }, zoom, Object.values(layout.clusters ?? {}));
    search.refresh();
    state.justLoaded = fit;
    if (step !== undefined) update(step);
  }

  const cursorId = () => {
    const entry = state?.trace.steps[state.step ?? 0]?.entry;
    return entry === null || entry === undefined ? null : `e${entry}`;
  };

  /** Open groups as frames behind their members: the name, what they save, and a click on the name folds them. */
  function drawFrames(openGroups, boxes) {
    const frames = groupLayer.selectAll("g.group-frame").data(openGroups.filter((g) => boxes[g.id]), (g) => g.id)
      .join((enter) => {
        const g = enter.append("g").attr("class", "group-frame").attr("data-collapsed", "false");
        g.append("rect").attr("class", "frame").attr("rx", 6);
        g.append("text").attr("class", "frame-label").attr("role", "button").attr("tabindex", 0);
        g.append("title");   // beside the name, not in it: setting the name's text would drop it
        return g;
      })
      .attr("data-group-id", (g) => g.id)
      .attr("data-depth", (g) => g.depth)
      .attr("class", (g) => (g.checkpoint ? "group-frame checkpointed" : "group-frame"));
    frames.select("rect.frame").each(function place(g) {
      const b = boxes[g.id];
      d3.select(this).attr("x", b.x - b.width / 2).attr("y", b.y - b.height / 2).attr("width", b.width).attr("height", b.height);
    });
    frames.select("text.frame-label")
      .on("click", (event, g) => { event.stopPropagation(); toggleGroup(g.id); })
      .on("keydown", (event, g) => { if (event.key === "Enter") toggleGroup(g.id); });
    frames.select("title").text((g) => `${g.title} · click to fold`);
    framed = { frames, openGroups, boxes };
    nameFrames(null);
  }

  let framed = null;   // the open frames drawn: {frames, openGroups, boxes}
  /** Name the open frames where they are in view (views/graph/frames.js); `view`: the part of the layout in the panel. */
  function nameFrames(view) {
    if (!framed?.openGroups.length) return;
    const labelAt = frameLabels(framed.openGroups, framed.boxes, view);
    framed.frames.select("text.frame-label")
      .attr("x", (g) => labelAt.get(g.id).x).attr("y", (g) => labelAt.get(g.id).y)
      .text((g) => labelAt.get(g.id).text);
  }

  /** A person folds or unfolds a group: theirs from now on (the player will not fold it back). */
  function toggleGroup(groupId) {
    if (!model?.fold) return null;
    toggleFold(model.fold, groupId);
    showFoldState();
    return relayout();
  }

  /** Unfold the groups a node is folded inside (a search hit): the person asked for it, so the player keeps it open. */
  async function reveal(nodeId) {
    if (model?.fold && revealNode(model.fold, model.byId.get(nodeId))) { showFoldState(); await relayout(); }
  }

  /** Unfold every group (the player then folds nothing), or fold them all back (the cursor's path opens again). */
  function setAllFolded(folded) {
    if (!model?.fold) return null;
    unfoldedByPerson = !folded;
    foldAll(model.fold, model.groups, folded);
    showFoldState();
    return relayout();
  }

  function showFoldState() {
    if (!controls.foldAll) return;
    controls.foldAll.hidden = !model?.groups.size;
    const anyFolded = Boolean(model?.fold?.collapsed.size);
    controls.foldAll.textContent = anyFolded ? "Unfold all" : "Fold all";
    controls.foldAll.setAttribute("aria-pressed", String(!anyFolded));
  }
  controls.foldAll?.addEventListener("click", () => setAllFolded(!model?.fold?.collapsed.size));

  function setClass(element, key, className) {
    if (state.lastClass.get(key) !== className) {
      state.lastClass.set(key, className);
      element.setAttribute("class", className);
    }
  }

  let followTimer = null;
  function followWhenSettled(step, stepIndex) {
    const node = step.entry === null || step.entry === undefined ? null : model.byId.get(`e${step.entry}`);
    clearTimeout(followTimer);
    followTimer = setTimeout(() => {
      followTimer = null;
      if (state?.step === stepIndex && followCursor(model.fold, node, stepIndex)) { showFoldState(); relayout(); }
    }, FOLLOW_SETTLE_MS);
  }

  /** Restyle for `step`: which entries are recorded, current, ready, swept; which saved tensors are held. */
  function update(stepIndex) {
    if (!state) return;
    const { trace, index, nodes, edges, nodeElements, edgeElements, badges } = state;
    const step = trace.steps[stepIndex];
    state.step = stepIndex;
    const sweep = index.sweepByStep.get(stepIndex);
    const ready = new Set(sweep ? sweep.ready : []);
    const afterBackward = index.backwardEnd !== null && stepIndex >= index.backwardEnd;
    const secondSweep = step.phase === "backward-2";
    const recorded = (entry) => (index.recordedAt.get(entry) ?? Infinity) <= stepIndex;
    // Op-level recomputation: the entries re-run during this backward step to re-derive a recipe's value.
    const rerun = new Set((index.rederivedAt.get(stepIndex) ?? []).map((t) => index.tensor(t.recompute_of)?.produced_by));
    // The player entered a group: unfold the folded groups on the cursor's path, fold back those it left, once the
    // steps settle (FOLLOW_SETTLE_MS without another): a held arrow key, a scrub or the fastest play only restyles,
    // since a refold is a relayout and a big graph's costs a quarter of a second.
    if (model.fold) noteShown(model.fold, stepIndex);
    followWhenSettled(step, stepIndex);
    state.progress.show(stepIndex, nodeElements);
    const cursorRep = step.entry === null || step.entry === undefined ? null : state.rep.get(`e${step.entry}`);
    const selectedRep = selected ? state.rep.get(selected) : null;
    nodes.forEach((n, i) => {
      if (n.isGroup) {
        let cls = n.group.checkpoint ? "node group-node checkpointed" : "node group-node";
        if (!n.group.entries.some(recorded)) cls += " future";
        else if (afterBackward) cls += " freed";
        if (cursorRep === n.id && step.phase !== "optimizer") cls += ` current ${step.phase}`;
        if (secondSweep && state.recordingGroups.has(n.group)) cls += " recorded-backward";
        if (selectedRep === n.id) cls += " selected";
        if (n.group.members.some((id) => search.matches(id))) cls += " match";
        setClass(nodeElements[i], n.id, cls);
        return;
      }
      let cls = n.isOp ? `node op fam-${n.family}${n.recompute ? " recompute-node" : ""}` : `node leaf kind-${n.kind}`;
      if (n.isOp && index.recordedBackward.has(n.entry)) {
        cls += " second-tape";                     // recorded by the first backward (create_graph)
        if (secondSweep) cls += " recorded-backward";   // ... and what backward-2 is sweeping now
      }
      if (n.isOp) {
        const swept = index.sweptAt.get(n.entry);
        if (!recorded(n.entry)) cls += " future";
        else if (afterBackward || (swept !== undefined && swept < stepIndex)) cls += " freed";
        if (step.entry === n.entry && step.phase !== "optimizer") cls += ` current ${step.phase}${step.recorded === false ? " inside" : ""}`;
        if (ready.has(n.entry)) cls += " ready";
        if (rerun.has(n.entry)) cls += " rerun";
      }
      const tensor = badges.get(n.id);
      if (tensor && index.held(tensor, stepIndex)) cls += " held";
      if (n.id === selected) cls += " selected";
      if (picked && n.isOp && picked.has(trace.tape[n.entry]?.output)) cls += " picked";
      if (search.matches(n.id)) cls += " match";
      setClass(nodeElements[i], n.id, cls);
    });
    // Pan (never re-layout) so the current node stays in view: smoothly, except right after a new graph is drawn.
    if (cursorRep) nav.follow(cursorRep, state.justLoaded);
    state.justLoaded = false;
    const flowing = sweep ? `e${sweep.entry}` : null;
    edges.forEach((e, i) => {
      if (e.link) {
        const started = (index.recomputeSteps.get(e.owner)?.[0] ?? Infinity) <= stepIndex;
        setClass(edgeElements[i], e.key, `edge ckpt-link${started ? " started" : ""}`);
        return;
      }
      const target = e.bundled ? Math.min(...e.targets.map((t) => (t[0] === "e" ? Number(t.slice(1)) : Infinity))) : Number(e.target.slice(1));
      let cls = e.bundled ? "edge bundle" : "edge";
      if (!recorded(target)) cls += " future";
      else if (flowing && e.target === flowing) cls += " adjoint";
      else if ((step.phase === "forward" || step.phase === "recompute") && step.entry === target) cls += " feeding";
      setClass(edgeElements[i], e.key, cls);
    });
  }

  /** Select a node, or a tensor (a lifetime bar, a breakdown row): the node that shows it is highlighted and, if off
   * screen, panned into view. */
  function select(id, stepIndex) {
    selected = nodeFor(id);
    if (!state) return;
    update(stepIndex);
    const shown = selected ? state.rep.get(selected) : null;
    if (shown) nav.follow(shown);
  }

  function nodeFor(id) {
    if (!id || !model || model.byId.has(id) || id[0] !== "t") return id || null;
    const tensor = model.index.tensor(Number(id.slice(1)));
    if (!tensor) return id;
    if (tensor.produced_by !== null && tensor.produced_by !== undefined) return `e${tensor.produced_by}`;
    return id;
  }

  function setPicked(ids) {
    picked = ids && ids.size ? ids : null;
    if (state && state.step !== undefined) update(state.step);    // a graph just drawn waits for the player's step
  }

  /** The graph's groups and each node's path through them, for the views grouped the same way (the lifetime chart). */
  const groupsView = () => ({ groups: model?.groups ?? new Map(), pathOf: (nodeId) => model?.byId.get(nodeId)?.groups ?? [] });

  return { load, update, select, setPicked, fit: () => nav.fit(), toggleGroup, groupsView, hasNode: (id) => !!model && model.byId.has(id) };
}
