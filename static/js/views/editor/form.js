// The editor's form: model-level fields, the optimizer step, the memory dials (batch, seq, width sliders) and the
// nested layer list with per-type controls, add/remove/reorder and wrap-selected. It renders from a spec and reports
// edits: ctx.value(path, value, mode) for a field, ctx.structural(mutate) for anything that changes the list's shape;
// ctx.checkpointFields() renders the checkpoint fieldset, which lives beside the spec, not in it. Every control, range,
// option list and help line comes from ctx.schema (GET /api/schema): a field declared in Python shows up here.
import { el } from "../../lib/dom.js";
import { checkControl, choiceOrNumberControl, numberControl, pairControls, rangeControl, selectControl, textControl } from "./controls.js";
import { defaultsOf, fieldOf, kindOf, layerTypes, optionFields, sliderMax, variantValue, wrapperTypes } from "../../model/spec-schema.js";
import { addLayer, changeOptimizer, changeType, getAt, moveLayer, removeLayer, widthPath, wrapLayers } from "../../model/spec.js";

function button(text, label, onClick, { disabled, class: className } = {}) {
  const node = el("button", { type: "button", "aria-label": label, title: label, disabled, class: className, text });
  node.addEventListener("click", onClick);
  return node;
}

// ------------------------------ one declared field ------------------------------

/** The control for one declared field at `path`: a checkbox, a select (with a number box for a choice that also
 * takes a number in [number_min, number_max]), a text box, a slider (fields with a step, unless `slider` is false)
 * or a number box; the field's help is its title. */
function fieldControl(field, path, value, onValue, { label = field.name.replace(/_/g, " "), slider = field.step !== undefined } = {}) {
  const shown = value ?? (field.required ? undefined : field.default);
  let control;
  if (field.type === "boolean") control = checkControl(label, path, shown, onValue);
  else if (field.type === "choice" && field.number_max !== undefined) {       // words or a number (loss_scale)
    control = choiceOrNumberControl(label, path, shown, field.options, onValue,
      { min: field.number_min, max: field.number_max, start: field.number_default });
    control.title = `${field.help}; a number from ${field.number_min} to ${field.number_max.toLocaleString("en")}`;
    return [control];
  } else if (field.type === "choice") control = selectControl(label, path, shown, field.options, onValue);
  else if (field.type === "text") control = textControl(label, path, value, onValue, { maxlength: field.max_length, placeholder: field.name });
  else if (field.type === "pair") {
    return pairControls([0, 1].map((i) => `${label} ${i + 1}`), path, shown, onValue, { min: field.min, max: field.max, step: "any" })
      .map((control, i) => Object.assign(control, { title: `${field.name}[${i}]: ${field.help}` }));
  } else if (slider) control = rangeControl(label, path, shown, onValue, { min: field.min, max: sliderMax(field), step: field.step });
  else control = numberControl(label, path, shown, onValue, { min: field.min, max: field.max, step: field.type === "integer" ? 1 : "any" });
  control.title = field.help;
  return [control];
}

/** The fields of one option of a variant object (input, loss, optimizer) at `base`, each a control. */
function optionControls(variants, value, base, ctx) {
  return optionFields(variants, value?.[variants.key]).flatMap((field) =>
    fieldControl(field, `${base}.${field.name}`, value?.[field.name], ctx.value, { slider: false }));
}

/** A variant's optional groups (loss.gradient_penalty): a switch that adds the group with its declared defaults or
 * removes it (a structural edit), and, when on, a control per field. */
function groupControls(variants, value, base, ctx) {
  return (variants.groups ?? []).flatMap((group) => {
    const path = `${base}.${group.name}`;
    const on = value?.[group.name] != null;
    const toggle = checkControl(group.name.replace(/_/g, " "), path, on, (at, checked) => ctx.structural((s) => {
      if (checked) s[base] = { ...s[base], [group.name]: defaultsOf(group.fields) };
      else delete s[base][group.name];
    }));
    toggle.title = group.help;
    if (!on) return [toggle];
    return [toggle, ...group.fields.flatMap((field) =>
      fieldControl(field, `${path}.${field.name}`, value[group.name][field.name], ctx.value, { slider: false }))];
  });
}

/** The select of a variant's options: a change writes the new option's defaults (a structural edit). */
/** The groups a variant object carries (a loss's gradient penalty), kept when its option changes. */
const groupsOf = (variants, value) => Object.fromEntries((variants.groups ?? []).filter((g) => value?.[g.name] != null).map((g) => [g.name, value[g.name]]));

function optionSelect(label, variants, value, base, ctx, change = (s, option) => { s[base] = { ...variantValue(variants, option), ...groupsOf(variants, s[base]) }; }) {
  const control = selectControl(label, `${base}.${variants.key}`, value?.[variants.key] ?? variants.default, Object.keys(variants.options),
    (path, option) => ctx.structural((s) => change(s, option)));
  control.title = variants.help;
  return control;
}

// ------------------------------ model-level fields ------------------------------

function modelFields(spec, ctx) {
  const schema = ctx.schema;
  const box = el("fieldset", { class: "model-fields" }, el("legend", { text: "Model" }));
  for (const name of ["batch", "dtype"]) box.append(...fieldControl(fieldOf(schema.fields, name), name, spec[name], ctx.value, { slider: false }));
  box.append(optionSelect("input", schema.input, spec.input, "input", ctx), ...optionControls(schema.input, spec.input, "input", ctx));
  const loss = spec.loss ?? { type: "sum" };
  box.append(optionSelect("loss", schema.loss, loss, "loss", ctx), ...optionControls(schema.loss, loss, "loss", ctx),
    ...groupControls(schema.loss, loss, "loss", ctx));
  return box;
}

const sentence = (text) => text.charAt(0).toUpperCase() + text.slice(1) + ".";

function optimizerFields(spec, ctx) {
  const variants = ctx.schema.optimizer;
  const optimizer = spec.optimizer ?? { type: "none" };
  const type = optimizer.type in variants.options ? optimizer.type : "none";
  const box = el("fieldset", { class: "optimizer-fields", "data-field": "optimizer" }, el("legend", { text: "Optimizer step" }));
  box.append(optionSelect("type", variants, optimizer, "optimizer", ctx, (s, next) => { s.optimizer = changeOptimizer(s.optimizer, next, ctx.schema); }));
  for (const control of optionControls(variants, { ...optimizer, type }, "optimizer", ctx)) {
    if (control.querySelector("input[type=number]") && !/\.(lr|betas\[\d\])$/.test(control.dataset.field)) control.classList.add("wide");
    box.append(control);
  }
  box.append(el("p", { class: "hint", "data-testid": "optimizer-state", text: sentence(variants.options[type].help) }));
  return box;
}

/** The training step's knobs: micro-batches (accumulate) and mixed precision ("off" leaves precision out of the
 * spec; an option writes its declared defaults, then its loss scale and growth interval are controls). */
function trainingFields(spec, ctx) {
  const schema = ctx.schema;
  const box = el("fieldset", { class: "training-fields", "data-field": "precision" }, el("legend", { text: "Training step" }));
  box.append(...fieldControl(fieldOf(schema.fields, "accumulate"), "accumulate", spec.accumulate, ctx.value, { slider: false }));
  const variants = schema.precision;
  const compute = spec.precision?.[variants.key] ?? "off";
  const select = selectControl("precision", `precision.${variants.key}`, compute, ["off", ...Object.keys(variants.options)],
    (path, option) => ctx.structural((s) => {
      if (option === "off") delete s.precision;
      else s.precision = variantValue(variants, option);
    }));
  select.title = variants.help;
  box.append(select);
  if (spec.precision) box.append(...optionControls(variants, spec.precision, "precision", ctx));
  return box;
}

/** A dial: a slider over a declared field's whole range (its max is the cap), at `path`. */
function dial(label, field, path, value, ctx, mode) {
  const control = rangeControl(label, path, value, ctx.value, { min: field.min, max: field.max, step: 1, field: false, mode });
  control.title = field.help;
  return control;
}

function dials(spec, ctx) {
  const schema = ctx.schema;
  const box = el("fieldset", { class: "dials" }, el("legend", { text: "Memory dials" }));
  box.append(dial("batch", fieldOf(schema.fields, "batch"), "batch", spec.batch, ctx, "batch"));
  if (spec.input?.kind === "tokens") {
    box.append(dial("seq", fieldOf(optionFields(schema.input, "tokens"), "seq"), "input.seq", spec.input.seq, ctx, "seq"));
  }
  const width = widthPath(spec);
  if (width) {
    const layer = getAt(spec, width.slice(0, width.lastIndexOf(".")));
    const field = fieldOf(kindOf(schema, layer.type).fields, width.slice(width.lastIndexOf(".") + 1));
    const control = dial("width", field, width, getAt(spec, width), ctx, "width");
    control.title = `width: ${width}, the first embedding's dim or linear's out`;
    box.append(control);
  }
  return box;
}

// ------------------------------ layers ------------------------------

function layerFields(layer, path, ctx) {
  const kind = kindOf(ctx.schema, layer.type);
  return (kind?.fields ?? []).filter((field) => field.name !== "name")
    .flatMap((field) => fieldControl(field, `${path}.${field.name}`, layer[field.name], ctx.value));
}

function layerItem(layer, path, index, count, ctx) {
  const item = el("li", { class: `layer type-${layer?.type ?? "unknown"}`, "data-layer": path, "data-field": path });
  const select = el("input", { type: "checkbox", class: "pick", "aria-label": `select ${path} to wrap it` });
  select.checked = ctx.selection.has(path);
  select.addEventListener("change", () => {
    if (select.checked) ctx.selection.add(path); else ctx.selection.delete(path);
    ctx.selectionChanged();
  });
  const types = layerTypes(ctx.schema);
  const type = selectControl("type", `${path}.type`, layer?.type, types, (p, t) => ctx.structural((s) => changeType(s, path, t, ctx.schema)));
  type.classList.add("type");
  type.title = kindOf(ctx.schema, layer?.type)?.help ?? "";
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
  if (kindOf(ctx.schema, layer?.type)?.wrapper) item.append(layerList(layer.layers, `${path}.layers`, ctx));
  return item;
}

function layerList(layers, listPath, ctx) {
  const list = Array.isArray(layers) ? layers : [];
  const box = el("div", { class: "layer-list", "data-field": listPath });
  const ol = el("ol", { "aria-label": `layers in ${listPath}` });
  list.forEach((layer, i) => ol.append(layerItem(layer, `${listPath}[${i}]`, i, list.length, ctx)));
  const kind = el("select", { "aria-label": `type of the layer to add to ${listPath}` });
  for (const type of layerTypes(ctx.schema)) kind.append(el("option", { value: type, text: type, title: kindOf(ctx.schema, type).help }));
  kind.value = ctx.lastAdded ?? "linear";
  kind.addEventListener("change", () => { ctx.lastAdded = kind.value; });
  const add = button("+ Add layer", `Add layer to ${listPath}`, () => ctx.structural((s) => {
    if (!Array.isArray(getAt(s, listPath))) s.layers = [];
    addLayer(s, listPath, kind.value, ctx.schema);
  }), { class: "add" });
  box.append(ol, el("div", { class: "add-row" }, kind, add));
  return box;
}

function wrapBar(ctx) {
  const bar = el("div", { class: "wrap-bar" });
  const count = ctx.selection.size;
  bar.append(el("span", { class: "hint", text: count ? `${count} selected` : "tick layers to wrap them" }));
  for (const type of wrapperTypes(ctx.schema)) {
    bar.append(button(`Wrap in ${type}`, `Wrap in ${type}: the selected layers`, () => {
      const paths = [...ctx.selection];
      ctx.selection.clear();
      ctx.structural((s) => wrapLayers(s, paths, type, ctx.schema));
    }, { disabled: count === 0 }));
  }
  return bar;
}

/** Render the whole form for `spec` into `root`. */
export function renderForm(root, spec, ctx) {
  const layers = el("fieldset", { class: "layers" }, el("legend", { text: "Layers" }), wrapBar(ctx), layerList(spec?.layers, "layers", ctx));
  // The checkpoint policy sits right under the dials: on a 1280×800 screen it is in view without scrolling the panel.
  root.replaceChildren(dials(spec ?? {}, ctx), ctx.checkpointFields?.() ?? "", layers, modelFields(spec ?? {}, ctx),
    optimizerFields(spec ?? {}, ctx), trainingFields(spec ?? {}, ctx));
}
