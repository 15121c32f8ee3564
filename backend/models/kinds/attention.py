"""Attention layers: multi-head self-attention (naive or fused) and the pre-LN transformer block around it."""
import math

import backend.tape as T
from backend.models.fields import Field
from backend.models.kinds.base import Kind, register, scoped
from backend.tape import layer_scope

ATTENTION_FIELDS = (
    Field("heads", "integer", "attention heads: each mixes a width/heads slice", default=1, low=1, cap="heads"),
    Field("causal", "boolean", "each position attends only to itself and earlier ones", default=True),
    Field("impl", "choice", "naive saves the [seq, seq] scores and probabilities; efficient (fused) saves only "
          "the output and a log-sum-exp per row", default="naive", options=("naive", "efficient")),
    Field("dropout", "number", "dropout on the attention probabilities (and, in a block, on each branch)",
          default=0.0, low=0.0, high=1.0, high_open=True, step=0.05),
)


def _plan_attention(layer, shape, path, problems, tally):
    if len(shape) != 3:
        problems.add(path, "attention needs a [batch, seq, dim] input: put it after an embedding")
        return None
    batch, seq, dim = shape
    if dim % layer["heads"]:
        problems.add(f"{path}.heads", f"must divide the width {dim}")
        return None
    tokens = batch * seq
    tally.params(4 * dim * dim + 4 * dim)
    tally.op(tokens * dim, entries=8 * 2 + 4)                  # q, k, v, proj (+bias) and head reshapes
    tally.matmul(tokens, dim, dim, times=4)
    tally.matmul(seq, dim // layer["heads"], seq, times=2 * batch * layer["heads"])    # scores, then mixing v
    if layer["impl"] == "naive":
        tally.op(batch * layer["heads"] * seq * seq * 5, entries=6)
    else:
        tally.op(tokens * dim + batch * layer["heads"] * seq, entries=1)
    if layer["type"] == "transformer_block":
        hidden = dim * layer["mlp_ratio"]
        tally.params(2 * dim * hidden + hidden + dim + 4 * dim)
        tally.op(tokens * (8 * dim + 3 * hidden), entries=14)
        tally.matmul(tokens, dim, hidden, times=2)
    return shape


def _attention(layer, width, ctx, path):
    heads = layer["heads"]
    head_dim = width // heads
    projections = {name: (ctx.weight(f"{path}.{name}.weight", (width, width), width),
                          ctx.bias(f"{path}.{name}.bias", width)) for name in ("q", "k", "v", "proj")}
    scale = 1.0 / math.sqrt(head_dim)

    def split_heads(h, name):
        w, b = projections[name]
        batch, seq, _ = h.shape
        return (h @ w + b).reshape(batch, seq, heads, head_dim).permute(0, 2, 1, 3)

    def attend(h):
        batch, seq, _ = h.shape
        q, k, v = split_heads(h, "q"), split_heads(h, "k"), split_heads(h, "v")
        if layer["impl"] == "efficient":
            mixed = T.scaled_dot_product_attention(q, k, v, is_causal=layer["causal"], dropout_p=layer["dropout"])
        else:
            scores = (q @ k.transpose(-2, -1)) * scale
            if layer["causal"]:
                scores = T.masked_fill(scores, ctx.causal_mask(seq), float("-inf"))
            probs = T.dropout(T.softmax(scores, dim=-1), layer["dropout"])
            mixed = probs @ v
        w, b = projections["proj"]
        return mixed.permute(0, 2, 1, 3).reshape(batch, seq, width) @ w + b
    return attend


def _transformer_block(layer, width, ctx, path):
    """Pre-LN GPT block: h + drop(attn(ln1(h))), then h + drop(fc2(gelu(fc1(ln2(h)))))."""
    ln1 = (ctx.constant_param(f"{path}.ln1.weight", width, 1.0), ctx.constant_param(f"{path}.ln1.bias", width, 0.0))
    attend = _attention(layer, width, ctx, f"{path}.attn")
    ln2 = (ctx.constant_param(f"{path}.ln2.weight", width, 1.0), ctx.constant_param(f"{path}.ln2.bias", width, 0.0))
    hidden = width * layer["mlp_ratio"]
    fc1 = (ctx.weight(f"{path}.fc1.weight", (width, hidden), width), ctx.bias(f"{path}.fc1.bias", hidden))
    fc2 = (ctx.weight(f"{path}.fc2.weight", (hidden, width), hidden), ctx.bias(f"{path}.fc2.bias", width))
    p = layer["dropout"]

    def block(h):
        with layer_scope(f"{path}.ln1"):
            a = T.layer_norm(h, *ln1)
        with layer_scope(f"{path}.attn"):
            h = h + T.dropout(attend(a), p)
        with layer_scope(f"{path}.ln2"):
            m = T.layer_norm(h, *ln2)
        with layer_scope(f"{path}.mlp"):
            m = T.gelu(m @ fc1[0] + fc1[1]) @ fc2[0] + fc2[1]
            return h + T.dropout(m, p)
    return block


def _build_attention(layer, width, ctx, path):
    return scoped(path, _attention(layer, width, ctx, path)), width


def _build_block(layer, width, ctx, path):
    return _transformer_block(layer, width, ctx, path), width


register(Kind("attention", "softmax(q·kᵀ/√d)·v over a [batch, seq, dim] input, with q, k, v and output projections",
              _plan_attention, _build_attention, params=True, fields=ATTENTION_FIELDS, unrecordable_op="attention"))
register(Kind("transformer_block", "pre-LN GPT block: h + attn(ln1(h)), then h + mlp(ln2(h))",
              _plan_attention, _build_block, params=True, unrecordable_op="layernorm", fields=(
                  *ATTENTION_FIELDS,
                  Field("mlp_ratio", "integer", "the MLP's hidden width as a multiple of the model width",
                        default=4, low=1, high=8),
              )))
