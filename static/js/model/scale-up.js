// scale-up.js — "Scale this model up": the ledger page's address (/ledger?layers=..&hidden=..) filled from a spec
// with transformer blocks, so the small model in the explorer opens at GPT scale with the same shape.

/** Visit every layer with how many times it runs (repeat multiplies, residual passes through). */
function walk(layers, times, visit) {
  for (const layer of Array.isArray(layers) ? layers : []) {
    if (!layer || typeof layer !== "object") continue;
    visit(layer, times);
    if (layer.type === "repeat") walk(layer.layers, times * (Number(layer.times) || 1), visit);
    else if (layer.type === "residual") walk(layer.layers, times, visit);
  }
}

/** The ledger query for a spec, or null when it has no transformer blocks (or no token input to scale). */
export function ledgerQuery(spec) {
  let blocks = 0;
  let block = null;
  let embedding = null;
  walk(spec?.layers, 1, (layer, times) => {
    if (layer.type === "transformer_block") { blocks += times; block ??= layer; }
    if (layer.type === "embedding") embedding ??= layer;
  });
  if (!blocks || !embedding || spec.input?.kind !== "tokens") return null;
  const query = new URLSearchParams({
    layers: String(blocks),
    hidden: String(embedding.dim),
    heads: String(block.heads ?? 1),
    vocab: String(spec.input.vocab),
    batch: String(spec.batch),
    seq: String(spec.input.seq),
    dtype: spec.dtype === "float16" ? "fp16" : "fp32",
    mlp_ratio: String(block.mlp_ratio ?? 4),
    attention: block.impl === "efficient" ? "flash" : "naive",
    dropout: String(Number(block.dropout ?? 0) > 0),
    tied_embeddings: "false",       // the engine's output head is its own linear, never the embedding table
    position_embeddings: "false",   // nor has it a learned position table (the ledger's default, GPT-2 small, does)
  });
  const optimizer = spec.optimizer?.type;
  // AdamW keeps Adam's two moments: the same bytes. The ledger's sgd has no momentum buffer.
  if (optimizer === "sgd" || optimizer === "adam" || optimizer === "adamw") query.set("optimizer", optimizer === "adamw" ? "adam" : optimizer);
  return query;
}

export function ledgerLink(spec) {
  const query = ledgerQuery(spec);
  return query ? `/ledger?${query}` : null;
}
