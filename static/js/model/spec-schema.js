// spec-schema.js — reading the spec's field schema (GET /api/schema, held by the workspace): the layer kinds
// and their fields, the top-level fields, and the options of input, loss and optimizer. The form draws every
// control, range, option list and default from here; no Python constant is repeated in JavaScript.

export const kindOf = (schema, type) => schema.layers.find((kind) => kind.type === type);
export const layerTypes = (schema) => schema.layers.map((kind) => kind.type);
export const wrapperTypes = (schema) => schema.layers.filter((kind) => kind.wrapper).map((kind) => kind.type);
export const fieldOf = (fields, name) => fields.find((field) => field.name === name);

/** The fields a spec object of this variant has ({key: option} excluded): input.kind, loss.type, optimizer.type. */
export const optionFields = (variants, option) => variants.options[option]?.fields ?? [];

/** What the server fills in for fields left out: each declared field's default (optional ones stay out). */
export function defaultsOf(fields) {
  const values = {};
  for (const field of fields) if (!field.optional) values[field.name] = structuredClone(field.default);
  return values;
}

/** A fresh spec object for one option of a variant: {kind: "tokens", vocab: 50, seq: 16}. */
export const variantValue = (variants, option) => ({ [variants.key]: option, ...defaultsOf(optionFields(variants, option)) });

/** A new layer of `type` as the editor adds it: its declared defaults, and a wrapper's default inner layers. */
export function newLayer(schema, type, name) {
  const kind = kindOf(schema, type);
  const layer = { type, ...defaultsOf(kind?.fields ?? []) };
  if (kind?.wrapper) layer.layers = structuredClone(kind.layers);
  if (name) layer.name = name;
  return layer;
}

/** A slider's top: the field's max, one step under it when the range is open there (dropout's p < 1). */
export const sliderMax = (field) => (field.max_open ? field.max - field.step : field.max);
