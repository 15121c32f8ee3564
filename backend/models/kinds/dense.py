"""Layers with a weight matrix: linear (x @ W + b) and embedding (a table lookup of token ids)."""
import math

import backend.tape as T
from backend.models.fields import Field
from backend.models.kinds.base import Kind, register, scoped


def _plan_linear(layer, shape, path, problems, tally):
    rows, width, out = math.prod(shape[:-1]), shape[-1], layer["out"]
    tally.params(width * out + (out if layer["bias"] else 0))
    tally.op(rows * out, entries=2 if layer["bias"] else 1)
    tally.matmul(rows, width, out)
    return (*shape[:-1], out)


def _build_linear(layer, width, ctx, path):
    w = ctx.weight(f"{path}.weight", (width, layer["out"]), width)
    b = ctx.bias(f"{path}.bias", layer["out"]) if layer["bias"] else None
    return scoped(path, lambda h: h @ w + b if b is not None else h @ w), layer["out"]


register(Kind(
    "linear", "x @ W + b: saves x for dW and W for dx (each only when that gradient is needed)",
    _plan_linear, _build_linear, params=True, fields=(
        Field("out", "integer", "output width: the columns of W", default=16, low=1, cap="width", required=True),
        Field("bias", "boolean", "add a learned bias b", default=True),
    )))


def _plan_embedding(layer, shape, path, problems, tally):
    tally.params(tally.vocab * layer["dim"])
    out = (*shape, layer["dim"])
    tally.op(math.prod(out))
    return out


def _build_embedding(layer, width, ctx, path):
    table = ctx.weight(f"{path}.weight", (ctx.vocab, layer["dim"]), ctx.vocab, std=0.02)
    return scoped(path, lambda tokens: T.embedding(tokens, table)), layer["dim"]


register(Kind(
    "embedding", "token ids -> rows of a [vocab, dim] table: the first layer on a tokens input",
    _plan_embedding, _build_embedding, params=True, reads_tokens=True, fields=(
        Field("dim", "integer", "the width of each token's row", default=32, low=1, cap="embedding_dim", required=True),
    )))
