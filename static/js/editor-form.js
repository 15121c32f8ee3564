// The editor's form: model-level fields, the optimizer step, the memory dials (batch, seq, width sliders) and the
// nested layer list with per-type controls, add/remove/reorder and wrap-selected. It renders from a spec and reports
// edits: ctx.value(path, value, mode) for a field, ctx.structural(mutate) for anything that changes the list's shape;
// ctx.checkpointFields() renders the checkpoint fieldset, which lives beside the spec, not in it.
import { el } from "./dom.js";
import { checkControl, numberControl, pairControls, rangeControl, selectControl, textControl } from "./editor-controls.js";
import {
  LAYER_TYPES, OPTIMIZER_DEFAULTS, OPTIMIZER_TYPES, WRAPPERS, addLayer, changeOptimizer, changeType, getAt, moveLayer,
  removeLayer, widthPath, wrapLayers,
} from "./editor-spec.js";

const DTYPES = ["float32", "float64", "float16"];
const LIMITS = { batch: 1024, seq: 512, width: 1024 };

function button(text, label, onClick, { disabled, class: className } = {}) {
  const node = el("button", { type: "button", "aria-label": label, title: label, disabled, class: className, text });
  node.addEventListener("click", onClick);
  return node;
}

// ------------------------------ model-level fields ------------------------------

function modelFields(spec, ctx) {
  const input = spec.input ?? {};
  const loss = spec.loss ?? { type: "sum" };
  const box = el("fieldset", { class: "model-fields" }, el("legend", { text: "Model" }));
  box.append(
    numberControl("batch", "batch", spec.batch, ctx.value, { min: 1, max: LIMITS.batch }),
    selectControl("dtype", "dtype", spec.dtype ?? "float32", DTYPES, ctx.value),
    selectControl("input", "input.kind", input.kind ?? "features", ["features", "tokens"], (path, kind) =>
      ctx.structural((s) => { s.input = kind === "tokens" ? { kind, vocab: 50, seq: 16 } : { kind, size: 1 }; })),
  );
  if (input.kind === "tokens") {
    box.append(numberControl("vocab", "input.vocab", input.vocab, ctx.value, { min: 2, max: 8192 }),
      numberControl("seq", "input.seq", input.seq, ctx.value, { min: 1, max: LIMITS.seq }));
  } else {
    box.append(numberControl("features", "input.size", input.size, ctx.value, { min: 1, max: 4096 }));
  }
  box.append(selectControl("loss", "loss.type", loss.type, ["sum", "mse", "cross_entropy"], (path, type) =>
    ctx.structural((s) => { s.loss = type === "mse" ? { type, target: "zeros" } : { type }; })));
  if (loss.type === "mse") box.append(selectControl("target", "loss.target", loss.target, ["zeros", "random", "square"], ctx.value));
  return box;
}

// What each optimizer keeps between steps: the memory chart's "optimizer" band after backward.
const OPTIMIZER_STATE = {
  none: "No optimizer step: the run ends after backward.",
  sgd: "State: none, unless momentum > 0: then one buffer the size of each weight.",
  adam: "State: m and v, running means of the gradient and of its square: two buffers the size of each weight. "
    + "Weight decay is L2, added to the gradient.",
  adamw: "State: m and v, running means of the gradient and of its square: two buffers the size of each weight. "
    + "Weight decay is decoupled: it shrinks the weights directly.",
};

function optimizerFields(spec, ctx) {
  const optimizer = spec.optimizer ?? { type: "none" };
  const type = OPTIMIZER_TYPES.includes(optimizer.type) ? optimizer.type : "none";
  const shown = { ...OPTIMIZER_DEFAULTS[type], ...optimizer };      // torch's defaults where the spec is silent
  const at = (key) => `optimizer.${key}`;
  const titled = (control, title) => { control.title = title; return control; };
  const box = el("fieldset", { class: "optimizer-fields", "data-field": "optimizer" }, el("legend", { text: "Optimizer step" }));
  box.append(selectControl("type", "optimizer.type", optimizer.type, OPTIMIZER_TYPES, (path, next) =>
    ctx.structural((s) => { s.optimizer = changeOptimizer(s.optimizer, next); })));
  if (type !== "none") {
    box.append(titled(numberControl("lr", at("lr"), shown.lr, ctx.value, { min: 0, max: 10, step: "any" }), "learning rate"));
  }
  if (type === "sgd") {
    const momentum = numberControl("momentum", at("momentum"), shown.momentum, ctx.value, { min: 0, max: 0.999, step: "any" });
    momentum.classList.add("wide");
    box.append(
      titled(momentum, "momentum: the share of the last update carried into this one (0.9 is usual; 0 is plain SGD)"),
      titled(checkControl("nesterov", at("nesterov"), shown.nesterov, ctx.value), "Nesterov momentum (needs momentum > 0)"));
  }
  if (type === "adam" || type === "adamw") {
    const [beta1, beta2] = pairControls(["β₁", "β₂"], at("betas"), shown.betas, ctx.value, { min: 0, max: 0.9999, step: "any" });
    box.append(titled(beta1, "betas[0]: decay rate of m, the gradient's running mean (0.9 is usual)"),
      titled(beta2, "betas[1]: decay rate of v, the squared gradient's running mean (0.999 is usual)"));
  }
  if (type !== "none") {
    const decay = numberControl("weight decay", at("weight_decay"), shown.weight_decay, ctx.value, { min: 0, max: 1, step: "any" });
    decay.classList.add("wide");
    box.append(titled(decay, type === "adamw" ? "decoupled: each step multiplies the weights by 1 − lr·weight_decay"
      : "L2: weight_decay·weight is added to the gradient"));
  }
  box.append(el("p", { class: "hint", "data-testid": "optimizer-state", text: OPTIMIZER_STATE[type] }));
  return box;
}

function dials(spec, ctx) {
  const box = el("fieldset", { class: "dials" }, el("legend", { text: "Memory dials" }));
  box.append(rangeControl("batch", "batch", spec.batch, ctx.value,
    { min: 1, max: Math.max(256, Number(spec.batch) || 1), step: 1, field: false, mode: "batch" }));
  if (spec.input?.kind === "tokens") {
    box.append(rangeControl("seq", "input.seq", spec.input.seq, ctx.value, { min: 1, max: LIMITS.seq, step: 1, field: false, mode: "seq" }));
  }
  const width = widthPath(spec);
  if (width) {
    const control = rangeControl("width", width, getAt(spec, width), ctx.value,
      { min: 1, max: Math.max(LIMITS.width / 2, Number(getAt(spec, width)) || 1), step: 1, field: false, mode: "width" });
    control.title = `width: ${width}, the first embedding's dim or linear's out`;
    box.append(control);
  }
  return box;
}

// ------------------------------ layers ------------------------------

function layerFields(layer, path, ctx) {
  const at = (key) => `${path}.${key}`;
  const v = ctx.value;
  switch (layer.type) {
    case "linear": return [numberControl("out", at("out"), layer.out, v, { min: 1, max: 4096 }), checkControl("bias", at("bias"), layer.bias ?? true, v)];
    case "dropout": return [rangeControl("p", at("p"), layer.p ?? 0.1, v, { min: 0, max: 0.95, step: 0.05 })];
    case "embedding": return [numberControl("dim", at("dim"), layer.dim, v, { min: 1, max: 1024 })];
    case "attention":
    case "transformer_block": return [
      numberControl("heads", at("heads"), layer.heads ?? 1, v, { min: 1, max: 16 }),
      ...(layer.type === "transformer_block" ? [numberControl("mlp ratio", at("mlp_ratio"), layer.mlp_ratio ?? 4, v, { min: 1, max: 8 })] : []),
      selectControl("impl", at("impl"), layer.impl ?? "naive", ["naive", "efficient"], v),
      checkControl("causal", at("causal"), layer.causal ?? true, v),
      rangeControl("dropout", at("dropout"), layer.dropout ?? 0, v, { min: 0, max: 0.95, step: 0.05 }),
    ];
    case "repeat": return [numberControl("times", at("times"), layer.times ?? 1, v, { min: 1, max: 64 })];
    default: return [];
  }
}

function layerItem(layer, path, index, count, ctx) {
  const item = el("li", { class: `layer type-${layer?.type ?? "unknown"}`, "data-layer": path, "data-field": path });
  const select = el("input", { type: "checkbox", class: "pick", "aria-label": `select ${path} to wrap it` });
  select.checked = ctx.selection.has(path);
  select.addEventListener("change", () => {
    if (select.checked) ctx.selection.add(path); else ctx.selection.delete(path);
    ctx.selectionChanged();
  });
  const type = selectControl("type", `${path}.type`, layer?.type, LAYER_TYPES, (p, t) => ctx.structural((s) => changeType(s, path, t)));
  type.classList.add("type");
  const name = textControl("name", `${path}.name`, layer?.name, ctx.value, { placeholder: "name" });
  name.classList.add("name");
  const tools = el("span", { class: "layer-tools" },
    button("↑", `move ${path} up`, () => ctx.structural((s) => moveLayer(s, path, -1)), { disabled: index === 0 }),
    button("↓", `move ${path} down`, () => ctx.structural((s) => moveLayer(s, path, +1)), { disabled: index === count - 1 }),
    button("✕", `remove ${path}`, () => ctx.structural((s) => removeLayer(s, path)), { class: "remove" }));
  item.append(
    el("div", { class: "layer-head" }, select, el("span", { class: "index", text: String(index) }), type, tools),
    el("div", { class: "layer-fields" }, name, ...layerFields(layer ?? {}, path, ctx)),
  );
  if (WRAPPERS.includes(layer?.type)) item.append(layerList(layer.layers, `${path}.layers`, ctx));
  return item;
}

function layerList(layers, listPath, ctx) {
  const list = Array.isArray(layers) ? layers : [];
  const box = el("div", { class: "layer-list", "data-field": listPath });
  const ol = el("ol", { "aria-label": `layers in ${listPath}` });
  list.forEach((layer, i) => ol.append(layerItem(layer, `${listPath}[${i}]`, i, list.length, ctx)));
  const kind = el("select", { "aria-label": `type of the layer to add to ${listPath}` });
  for (const type of LAYER_TYPES) kind.append(el("option", { value: type, text: type }));
  kind.value = ctx.lastAdded ?? "linear";
  kind.addEventListener("change", () => { ctx.lastAdded = kind.value; });
  const add = button("+ Add layer", `add a layer to ${listPath}`, () => ctx.structural((s) => {
    if (!Array.isArray(getAt(s, listPath))) s.layers = [];
    addLayer(s, listPath, kind.value);
  }), { class: "add" });
  box.append(ol, el("div", { class: "add-row" }, kind, add));
  return box;
}

function wrapBar(ctx) {
  const bar = el("div", { class: "wrap-bar" });
  const count = ctx.selection.size;
  bar.append(el("span", { class: "hint", text: count ? `${count} selected` : "tick layers to wrap them" }));
  for (const type of WRAPPERS) {
    bar.append(button(`Wrap in ${type}`, `wrap the selected layers in a ${type}`, () => {
      const paths = [...ctx.selection];
      ctx.selection.clear();
      ctx.structural((s) => wrapLayers(s, paths, type));
    }, { disabled: count === 0 }));
  }
  return bar;
}

/** Render the whole form for `spec` into `root`. */
export function renderForm(root, spec, ctx) {
  const layers = el("fieldset", { class: "layers" }, el("legend", { text: "Layers" }), wrapBar(ctx), layerList(spec?.layers, "layers", ctx));
  // The checkpoint policy sits right under the dials: on a 1280×800 screen it is in view without scrolling the panel.
  root.replaceChildren(dials(spec ?? {}, ctx), ctx.checkpointFields?.() ?? "", layers, modelFields(spec ?? {}, ctx),
    optimizerFields(spec ?? {}, ctx));
}
