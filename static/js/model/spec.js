// Spec helpers for the editor: path get/set ("layers[2].layers[0].out") and the structural edits on layer lists
// (add, remove, move, change type, wrap in a wrapper kind), with new layers' defaults from the schema.
// Every function here works on plain JSON objects; the caller clones before mutating.
import { kindOf, newLayer, variantValue } from "./spec-schema.js";

/** The optimizer a type change leaves: that type's declared defaults, with the learning rate carried over. */
export function changeOptimizer(previous, type, schema) {
  const next = variantValue(schema.optimizer, type);
  if ("lr" in next && previous?.lr !== undefined) next.lr = previous.lr;
  return next;
}

export const clone = (value) => JSON.parse(JSON.stringify(value));
export const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** "layers[2].out" -> ["layers", 2, "out"] */
export function parsePath(path) {
  const keys = [];
  for (const m of path.matchAll(/([A-Za-z_][A-Za-z_0-9]*)|\[(\d+)\]/g)) keys.push(m[1] ?? Number(m[2]));
  return keys;
}

export function getAt(obj, path) {
  let node = obj;
  for (const key of parsePath(path)) {
    if (node == null || typeof node !== "object") return undefined;
    node = node[key];
  }
  return node;
}

export function setAt(obj, path, value) {
  const keys = parsePath(path);
  let node = obj;
  keys.slice(0, -1).forEach((key, i) => {
    if (node[key] == null || typeof node[key] !== "object") node[key] = typeof keys[i + 1] === "number" ? [] : {};
    node = node[key];
  });
  node[keys[keys.length - 1]] = value;
}

/** "layers[1].layers[3]" -> {listPath: "layers[1].layers", index: 3} */
export function splitLayerPath(path) {
  const m = /^(.*)\[(\d+)\]$/.exec(path);
  return { listPath: m[1], index: Number(m[2]) };
}

function listAt(spec, listPath) {
  const list = getAt(spec, listPath);
  if (!Array.isArray(list)) throw new Error(`${listPath} is not a list of layers`);
  return list;
}

/** Append a new layer of `type`: its defaults, but a layer with a width (`out`) keeps the width of the last layer before
 * it that has one, so the model still fits its loss (a linear out=16 after lab1-mlp's out=1 broke its x² target). */
export function addLayer(spec, listPath, type, schema) {
  const list = listAt(spec, listPath);
  const layer = newLayer(schema, type);
  const before = list.findLast((other) => Number.isInteger(other?.out));
  if ("out" in layer && before) layer.out = before.out;
  list.push(layer);
}

export function removeLayer(spec, path) {
  const { listPath, index } = splitLayerPath(path);
  listAt(spec, listPath).splice(index, 1);
}

export function moveLayer(spec, path, delta) {
  const { listPath, index } = splitLayerPath(path);
  const list = listAt(spec, listPath);
  const to = index + delta;
  if (to < 0 || to >= list.length) return false;
  [list[index], list[to]] = [list[to], list[index]];
  return true;
}

/** Change a layer's type: the new type's defaults, keeping the name and (for wrappers) the inner layers. */
export function changeType(spec, path, type, schema) {
  const old = getAt(spec, path) ?? {};
  const layer = newLayer(schema, type, old.name);
  if (kindOf(schema, type)?.wrapper && Array.isArray(old.layers)) layer.layers = old.layers;
  setAt(spec, path, layer);
}

/** Wrap the selected layers (siblings of one list) in a wrapper kind (residual, repeat, no_grad), at the first one's place. */
export function wrapLayers(spec, paths, type, schema) {
  const parts = paths.map(splitLayerPath);
  const listPath = parts[0].listPath;
  if (parts.some((p) => p.listPath !== listPath)) throw new Error("select layers of one list to wrap them");
  const indices = parts.map((p) => p.index).sort((a, b) => a - b);
  const list = listAt(spec, listPath);
  const wrapper = newLayer(schema, type);
  wrapper.layers = indices.map((i) => list[i]);
  for (const i of [...indices].reverse()) list.splice(i, 1);
  list.splice(indices[0], 0, wrapper);
  return `${listPath}[${indices[0]}]`;
}

/** The path of the model's width dial: the first embedding's dim or the first linear's out, depth first. */
export function widthPath(spec) {
  const walk = (layers, base) => {
    if (!Array.isArray(layers)) return null;
    for (const [i, layer] of layers.entries()) {
      const path = `${base}[${i}]`;
      if (layer?.type === "embedding") return `${path}.dim`;
      if (layer?.type === "linear") return `${path}.out`;
      const inner = Array.isArray(layer?.layers) ? walk(layer.layers, `${path}.layers`) : null;
      if (inner) return inner;
    }
    return null;
  };
  return walk(spec?.layers, "layers");
}
