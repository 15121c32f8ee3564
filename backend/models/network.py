"""Spec → forward: create each layer's parameters (seeded) and return its forward function."""
import math

import numpy as np

import backend.tape as T
from backend.models.layers import ACTIVATIONS
from backend.tape import layer_scope, parameter, tensor


class BuildContext:
    """What layers share while being built: the seeded generator, dtype, parameters and the causal masks."""

    def __init__(self, rng, dtype, init_std, vocab):
        self.rng, self.dtype, self.init_std, self.vocab = rng, dtype, init_std, vocab
        self.params = {}
        self._masks = {}

    def weight(self, name, shape, fan_in, std=None):
        if std is None:
            std = self.init_std if self.init_std is not None else 1.0 / math.sqrt(fan_in)
        return self._param(name, self.rng.normal(0, std, shape))

    def bias(self, name, size):
        values = self.rng.normal(0, self.init_std, (size,)) if self.init_std is not None else np.zeros(size)
        return self._param(name, values)

    def constant_param(self, name, size, value):
        return self._param(name, np.full(size, value))

    def _param(self, name, values):
        p = parameter(values.astype(self.dtype), name=name)
        self.params[name] = p
        return p

    def causal_mask(self, seq):
        if seq not in self._masks:
            self._masks[seq] = tensor(np.triu(np.ones((seq, seq), dtype=bool), 1), name="causal_mask")
        return self._masks[seq]


def scoped(path, fn):
    def run(h):
        with layer_scope(path):
            return fn(h)
    return run


def build_layer(layer, width, ctx, path):
    """Returns (forward function, output width)."""
    kind = layer["type"]
    if kind == "linear":
        w = ctx.weight(f"{path}.weight", (width, layer["out"]), width)
        b = ctx.bias(f"{path}.bias", layer["out"]) if layer["bias"] else None
        return scoped(path, lambda h: h @ w + b if b is not None else h @ w), layer["out"]
    if kind in ACTIVATIONS:
        return scoped(path, ACTIVATIONS[kind]), width
    if kind == "layernorm":
        gamma, beta = ctx.constant_param(f"{path}.weight", width, 1.0), ctx.constant_param(f"{path}.bias", width, 0.0)
        return scoped(path, lambda h: T.layer_norm(h, gamma, beta)), width
    if kind == "rmsnorm":
        gamma = ctx.constant_param(f"{path}.weight", width, 1.0)
        return scoped(path, lambda h: T.rms_norm(h, gamma)), width
    if kind == "dropout":
        return scoped(path, lambda h: T.dropout(h, layer["p"])), width
    if kind == "embedding":
        table = ctx.weight(f"{path}.weight", (ctx.vocab, layer["dim"]), ctx.vocab, std=0.02)
        return scoped(path, lambda tokens: T.embedding(tokens, table)), layer["dim"]
    if kind == "attention":
        return scoped(path, _attention(layer, width, ctx, path)), width
    if kind == "transformer_block":
        return _transformer_block(layer, width, ctx, path), width
    if kind == "residual":
        inner, out_width = build_layers(layer["layers"], width, ctx, f"{path}.layers")

        def residual(h):
            branch = h
            for fn in inner:
                branch = fn(branch)
            with layer_scope(path):
                return h + branch          # h is used twice: its gradient is the skip's share plus the branch's
        return residual, out_width
    if kind == "repeat":
        fns = []
        for i in range(layer["times"]):
            inner, width = build_layers(layer["layers"], width, ctx, f"{path}[{i}]")
            fns.extend(inner)
        return chain(fns), width
    raise AssertionError(kind)


def build_layers(layers, width, ctx, path):
    fns = []
    for i, layer in enumerate(layers):
        fn, width = build_layer(layer, width, ctx, f"{path}[{i}]")
        fns.append(fn)
    return fns, width


def chain(fns):
    """One forward function running `fns` in order."""
    def run(h):
        for fn in fns:
            h = fn(h)
        return h
    return run


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


def build_blocks(layers, width, ctx):
    """Top-level blocks in forward order, each (path, forward): a repeat contributes one block per iteration.

    Blocks are what checkpoint schedules count as "layers".
    """
    blocks = []
    for i, layer in enumerate(layers):
        path = f"layers[{i}]"
        if layer["type"] == "repeat":
            for j in range(layer["times"]):
                inner, width = build_layers(layer["layers"], width, ctx, f"{path}[{j}]")
                blocks.append((f"{path}[{j}]", chain(inner)))
        else:
            fn, width = build_layer(layer, width, ctx, path)
            blocks.append((path, fn))
    return blocks, width
