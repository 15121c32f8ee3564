// lifetime-rows.js — the lifetime chart's rows, grouped by scope: the parameters folded into one "resident" band, and
// the other saved tensors under the graph's groups (graph-groups.js: scopes, and range groups over long repeats). A
// folded group is one row spanning its tensors' lifetimes; an open group is a header row with its members under it.
// So a chart of 5,000 tensors opens as a dozen named rows, and every row keeps its name however far it is opened.

export const RESIDENT = "resident";
const OPEN_ALL_UNDER = 60;    // a run with this few saved activations opens with every group open

/** index: trace-index.js; groups: Map id -> group (graph-groups.js); pathOf(nodeId): the node's group ids, outermost
 * first. Returns {tensorPath: Map tensor id -> group ids, defaultOpen: Set of group ids}. */
export function lifetimeTree(index, groups, pathOf) {
  const tensorPath = new Map();
  let activations = 0;
  for (const tensor of index.savedTensors) {
    if (tensor.kind === "param") continue;
    activations += 1;
    const producer = tensor.produced_by === null || tensor.produced_by === undefined ? null : `e${tensor.produced_by}`;
    tensorPath.set(tensor.id, producer ? pathOf(producer) ?? [] : []);
  }
  return { tensorPath, defaultOpen: new Set(activations <= OPEN_ALL_UNDER ? groups.keys() : []) };
}

/** The rows drawn for `open` (group ids, and RESIDENT when the band is open): [{key, label, born, end, kind,
 * tensor?, group?, count, depth}], in order of birth. */
export function lifetimeRows(index, groups, tree, open) {
  const end = (t) => (t.freed === null ? index.lastStep : t.freed);
  const rows = [];
  const byGroup = new Map();
  const params = index.savedTensors.filter((t) => t.kind === "param");
  if (params.length) {
    const band = { key: RESIDENT, label: `${open.has(RESIDENT) ? "▾" : "▸"} parameters (resident) · ${params.length}`,
      born: Math.min(...params.map((t) => t.born)), end: Math.max(...params.map(end)), kind: "param", count: params.length, depth: 0, band: true };
    rows.push(band);
    if (open.has(RESIDENT)) for (const t of params) rows.push({ key: `t${t.id}`, label: t.name, born: t.born, end: end(t), kind: t.kind, tensor: t, depth: 1 });
  }
  const order = [];
  for (const tensor of index.savedTensors) {
    if (tensor.kind === "param") continue;
    const path = tree.tensorPath.get(tensor.id) ?? [];
    let depth = 0;
    let shownAs = null;
    for (const id of path) {
      if (!byGroup.has(id)) {
        const group = groups.get(id);
        const row = { key: `g:${id}`, label: `${open.has(id) ? "▾" : "▸"} ${group?.label ?? id}`, born: Infinity, end: -Infinity,
          kind: "group", group: id, count: 0, depth, open: open.has(id) };
        byGroup.set(id, row);
        order.push(row);
      }
      const row = byGroup.get(id);
      row.born = Math.min(row.born, tensor.born);
      row.end = Math.max(row.end, end(tensor));
      row.count += 1;
      depth += 1;
      if (!open.has(id)) { shownAs = row; break; }
    }
    if (!shownAs) order.push({ key: `t${tensor.id}`, label: tensor.name, born: tensor.born, end: end(tensor), kind: tensor.kind, tensor, depth });
  }
  for (const row of order) if (row.group) row.label = `${row.label} · ${row.count} tensor${row.count === 1 ? "" : "s"}`;
  return rows.concat(order);
}

/** The group ids to open so that tensor `tensorId`'s own row is drawn (a selection made elsewhere). */
export function pathToTensor(index, tree, tensorId) {
  const tensor = index.tensor(tensorId);
  if (!tensor) return [];
  return tensor.kind === "param" ? [RESIDENT] : tree.tensorPath.get(tensorId) ?? [];
}
