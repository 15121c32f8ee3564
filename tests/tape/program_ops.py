"""The op generators of the random programs (tests/tape/programs.py), one row per op in GENERATORS.

Adding an op: write `def _my_op(b)` that picks its inputs with the Builder (`b.pick`, `b.param`, `b.const`,
`b.indices`, `b.mask`), emits its statement with `b.emit` (or `b.emit_inplace`) and returns True, or False
when no value fits; then add one `Gen("my_op", "family", _my_op)` row to GENERATORS. FAMILIES switches a whole
family on or off: a program draws its statements only from enabled families (so turning one off changes which
program an index builds), and `b.allows(family)` lets a generator hold back a variant that belongs to another.
"""
from dataclasses import dataclass
from typing import Callable

import numpy as np

# Every family is on: a failing one is a finding to fix in the engine, never a reason to switch it off here
# (switch families off locally to isolate a failure). index_0d, inplace_mul_by_grad and inplace_0d refine the
# in-place families: they show only in programs that also draw an in-place statement.
FAMILIES = {
    "elementwise": True,        # tanh sigmoid exp log gelu relu pow neg, scalar arithmetic
    "broadcast": True,          # + - * / between values of broadcastable shapes
    "matmul": True,
    "matmul_1d": True,          # a vector operand: [..., n, k] @ [k], [n] @ [n, m], [k] @ [k]
    "reduce": True,             # sum mean max, softmax log_softmax
    "view": True,               # reshape, permute, transpose, .T, basic slicing
    "index_0d": True,           # an integer index down to a 0-d view: x[1] on a vector
    "inplace": True,            # add_ mul_ relu_ on an intermediate that has no views
    "inplace_mul_by_grad": True,       # mul_ by a tensor that requires grad: its vjp needs the target before the write
    "inplace_0d": True,         # an in-place op on a 0-d value (a full reduction, a loss)
    "inplace_view": True,       # ... on a view of an intermediate, then the base is used
    "inplace_base_after_view": True,   # ... on an intermediate after a view of it was taken, then the view is used
    "concat": True,
    "masked_fill": True,
    "embedding": True,
    "norm": True,               # layer_norm, rms_norm
    "attention": True,          # scaled_dot_product_attention, causal with Lq == Lk or not causal
    "attention_causal_rect": True,     # causal with Lq != Lk (top-left aligned mask, as in torch)
    "attention_v_only": True,   # only v requires grad
    "loss": True,               # mse_loss, cross_entropy
    "cross_entropy_options": True,     # ignore_index, label_smoothing
    "pow_at_zero": True,        # x ** 0 on values holding exact zeros
    "relu_gate_inf": True,      # x.relu() ** 0.5: an infinite adjoint behind relu's closed gate
}


def broadcastable_shape(b, shape):
    """A shape that broadcasts against `shape`: some dims set to 1, some leading dims dropped."""
    dims = [1 if b.rng.random() < 0.4 else d for d in shape]
    return tuple(dims[b.rng.randint(0, len(dims) - 1):]) if dims else ()


def broadcast(a, c):
    return tuple(np.broadcast_shapes(a, c))


# ============================== elementwise ==============================

def _unary(expr, needs_positive=False, saves_out=False, flags=None):
    def gen(b):
        x = b.pick(lambda v: v.positive or not needs_positive)
        if x is None:
            return False
        b.emit(expr.format(x=x.name), x.shape, [x], saves_out=saves_out, **(flags or {}))
        return True
    return gen


def _pow(b):
    x = b.pick()
    exponent = b.rng.choice([2, 3, 0.5, 1.5, -1] if x.positive else [2, 3])
    b.emit(f"{x.name} ** {exponent}", x.shape, [x], positive=x.positive)
    return True


def _scalar(b):
    x = b.pick()
    expr, positive = b.rng.choice([("{x} * 0.5", x.positive), ("{x} + 1.5", x.positive), ("2.0 - {x}", False),
                                   ("{x} / 3.0", x.positive), ("-{x}", False)]
                                  + ([("1.0 / {x}", True)] if x.positive else []))
    b.emit(expr.format(x=x.name), x.shape, [x], saves=False, positive=positive)
    return True


def _pow_at_zero(b):
    x = b.pick(lambda v: v.zeros)
    if x is None:     # a leaf holding exact zeros, kept out of the pool: relu or max at 0 would be a kink
        shape = b.shape()
        x = b._leaf("p", f"T.parameter(np.where(rng.random({shape}) < 0.4, 0.0, rng.uniform(-1.0, 1.0, {shape})))",
                    shape, True, pooled=False)
    b.emit(f"{x.name} ** {b.rng.choice([0, 0, 2, 3])}", x.shape, [x])
    return True


def _relu_gate_inf(b):
    """relu then a power with an infinite slope at 0: the closed gate must stop the inf (PyTorch gives 0)."""
    x = b.pick()
    b.emit(f"{x.name}.relu() ** 0.5", x.shape, [x])
    return True


# ============================== broadcasting binary ==============================

def _binary(b):
    a = b.pick()
    symbol = b.rng.choice(["+", "-", "*", "/"])
    other = b.pick(lambda v: v is not a and _broadcasts(v.shape, a.shape) and (symbol != "/" or v.positive))
    if other is None or b.rng.random() < 0.5:
        other = b.param(broadcastable_shape(b, a.shape), positive=symbol == "/")
    left, right = (a, other) if b.rng.random() < 0.7 or symbol == "/" else (other, a)
    positive = left.positive and right.positive and symbol != "-"
    b.emit(f"{left.name} {symbol} {right.name}", broadcast(left.shape, right.shape), [left, right],
           saves=symbol in "*/", positive=positive)
    return True


def _broadcasts(shape, other):
    try:
        np.broadcast_shapes(shape, other)
        return True
    except ValueError:
        return False


# ============================== matmul ==============================

def _matmul(b):
    a = b.pick(lambda v: len(v.shape) >= 2)
    if a is None:
        return False
    *batch, _, k = a.shape
    m = b.dim()
    other = b.pick(lambda v: v is not a and len(v.shape) >= 2 and v.shape[-2] == k
                   and _broadcasts(tuple(batch), v.shape[:-2]))
    if other is None or b.rng.random() < 0.5:
        other = b.param((k, m) if b.rng.random() < 0.7 else (*batch, k, m))
    out = (*broadcast(tuple(batch), other.shape[:-2]), a.shape[-2], other.shape[-1])
    b.emit(f"{a.name} @ {other.name}", out, [a, other])
    return True


def _matmul_1d(b):
    a = b.pick(lambda v: len(v.shape) >= 1)
    case = b.rng.choice(["matrix-vector", "vector-matrix", "dot"])
    if case == "matrix-vector" and len(a.shape) >= 2:
        vector = b.param((a.shape[-1],))
        b.emit(f"{a.name} @ {vector.name}", a.shape[:-1], [a, vector])
    elif case == "vector-matrix" and len(a.shape) == 2:
        vector = b.param((a.shape[0],))
        b.emit(f"{vector.name} @ {a.name}", a.shape[1:], [vector, a])
    elif len(a.shape) == 1:
        vector = b.param(a.shape)
        b.emit(f"{a.name} @ {vector.name}", (), [a, vector])
    else:
        return False
    return True


# ============================== reductions and softmaxes ==============================

def _reduce(b):
    x = b.pick(lambda v: len(v.shape) >= 1)
    kind = b.rng.choice(["sum", "mean", "max"])
    ndim = len(x.shape)
    if kind != "max" and b.rng.random() < 0.25:
        b.emit(f"F.{kind}({x.name})", (), [x], saves=False)
        return True
    axis = b.axis(ndim)
    if kind != "max" and ndim >= 2 and b.rng.random() < 0.3:
        axis = (0, -1)
    reduced = {a % ndim for a in (axis if isinstance(axis, tuple) else (axis,))}
    keepdims = b.rng.random() < 0.4
    shape = tuple(1 if i in reduced else d for i, d in enumerate(x.shape) if keepdims or i not in reduced)
    b.emit(f"F.{kind}({x.name}, axis={axis}, keepdims={keepdims})", shape, [x], saves=kind == "max")
    return True


def _softmax(b):
    x = b.pick(lambda v: len(v.shape) >= 1)
    kind = b.rng.choice(["softmax", "log_softmax"])
    dim = b.axis(len(x.shape))
    b.emit(f"F.{kind}({x.name}, dim={dim})", x.shape, [x], saves=False, saves_out=True,
           positive=kind == "softmax")
    return True


# ============================== views ==============================

def _view(b, x=None):
    x = x or b.pick(lambda v: len(v.shape) >= 1)
    shape, ndim = x.shape, len(x.shape)
    kind = b.rng.choice(["reshape", "permute", "transpose", "T", "slice"])
    flags = {"positive": x.positive, "zeros": x.zeros}
    if kind == "reshape" and ndim >= 2:
        i = b.rng.randrange(ndim - 1)
        out = shape[:i] + (shape[i] * shape[i + 1],) + shape[i + 2:]
        spelled = tuple(-1 if j == i and b.rng.random() < 0.5 else d for j, d in enumerate(out))
        expr = f"{x.name}.reshape{spelled}" if len(out) > 1 else f"{x.name}.reshape({spelled[0]})"
        b.emit(expr, out, [x], saves=False, view=True, **flags)
        b.reshaped.add(x.storage)
    elif kind == "reshape":
        out = (1, shape[0]) if b.rng.random() < 0.5 else (shape[0], 1)
        b.emit(f"{x.name}.reshape{out}", out, [x], saves=False, view=True, **flags)
        b.reshaped.add(x.storage)
    elif kind == "permute" and ndim >= 3:
        axes = list(range(ndim))
        b.rng.shuffle(axes)
        b.emit(f"{x.name}.permute{tuple(axes)}", tuple(shape[a] for a in axes), [x], saves=False, view=True, **flags)
    elif kind == "transpose" and ndim >= 2:
        d0, d1 = b.rng.sample(range(ndim), 2)
        out = list(shape)
        out[d0], out[d1] = out[d1], out[d0]
        if b.rng.random() < 0.5:
            d0 -= ndim
        b.emit(f"{x.name}.transpose({d0}, {d1})", out, [x], saves=False, view=True, **flags)
    elif kind == "T" and ndim == 2:
        b.emit(f"{x.name}.T", shape[::-1], [x], saves=False, view=True, **flags)
    else:
        return _slice(b, x, flags)
    return True


def _slice(b, x, flags):
    axes = [i for i, d in enumerate(x.shape) if d >= 2]
    if not axes:
        return False
    axis = b.rng.choice(axes)
    size = x.shape[axis]
    lead = "..., " if axis == len(x.shape) - 1 and axis > 0 and b.rng.random() < 0.5 else ":, " * axis
    choice = b.rng.choice(["range", "step", "int"])
    if choice == "range":
        start = b.rng.randrange(size - 1)
        stop = b.rng.randrange(start + 1, size + 1)
        spelled = f"{start}:{stop}" if stop < size or b.rng.random() < 0.5 else f"{start - size}:"
        key, out = spelled, x.shape[:axis] + (stop - start,) + x.shape[axis + 1:]
    elif choice == "step":
        key, out = "::2", x.shape[:axis] + ((size + 1) // 2,) + x.shape[axis + 1:]
    elif len(x.shape) > 1 or b.allows("index_0d"):
        i = b.rng.randrange(size) - (size if b.rng.random() < 0.3 else 0)
        key, out = str(i), x.shape[:axis] + x.shape[axis + 1:]
        if not out:
            b.uses("index_0d")
    else:
        key, out = "::2", x.shape[:axis] + ((size + 1) // 2,) + x.shape[axis + 1:]
    b.emit(f"{x.name}[{lead}{key}]", out, [x], saves=False, view=True, **flags)
    return True


# ============================== in-place ==============================

def _inplace(which):
    def gen(b):
        def fits(v):
            if not b.writable(v) or v.leaf:
                return False
            if which == "inplace":
                return not v.view and v.storage not in b.viewed
            if which == "inplace_view":
                return v.view
            return not v.view and v.storage in b.viewed
        target = b.pick(fits)
        if target is None and which != "inplace":
            base = b.pick(lambda v: b.writable(v) and not v.leaf and not v.view and len(v.shape) >= 1)
            if base is None or not _view(b, base):
                return False
            if base.storage in b.reshaped:
                return True             # the view drawn was a reshape: it stands as a statement, unwritten
            target = b.values[-1] if which == "inplace_view" else base
        if target is None:
            return False
        kind = b.rng.choice(["add_", "mul_", "relu_"] if target.grad else ["add_", "mul_"])
        if not target.shape:
            b.uses("inplace_0d")
        if kind == "relu_":
            b.emit_inplace(target, "relu_()", [], saves=True)
            target.zeros = True
        elif target.grad and b.rng.random() < 0.4:
            b.emit_inplace(target, f"{kind}({b.rng.choice([2.0, -0.5, 1.5])})", [], saves=kind == "mul_")
        elif kind == "mul_" and not b.allows("inplace_mul_by_grad"):
            other = b.const(broadcastable_shape(b, target.shape))
            b.emit_inplace(target, f"mul_({other.name})", [other], saves=True)
        else:
            other = b.param(broadcastable_shape(b, target.shape))
            b.emit_inplace(target, f"{kind}({other.name})", [other], saves=kind == "mul_")
            if kind == "mul_":
                b.uses("inplace_mul_by_grad")
        return True
    return gen


# ============================== concat, masking, lookup ==============================

def _concat(b):
    a = b.pick(lambda v: len(v.shape) >= 1)
    signed = b.axis(len(a.shape))
    dim = signed % len(a.shape)
    other = b.pick(lambda v: len(v.shape) == len(a.shape)
                   and all(d == e for i, (d, e) in enumerate(zip(v.shape, a.shape)) if i != dim))
    if b.rng.random() < 0.3:
        other = b.param(a.shape[:dim] + (b.dim(),) + a.shape[dim + 1:])
    out = a.shape[:dim] + (a.shape[dim] + other.shape[dim],) + a.shape[dim + 1:]
    b.emit(f"F.cat([{a.name}, {other.name}], dim={signed})", out, [a, other], saves=False)
    return True


def _masked_fill(b):
    x = b.pick(lambda v: len(v.shape) >= 1)
    mask = b.mask(broadcastable_shape(b, x.shape))
    value = b.rng.choice([-1.5, 0.7, 0.0])
    b.emit(f"F.masked_fill({x.name}, {mask.name}, {value})", x.shape, [x], saves=False, zeros=value == 0.0)
    return True


def _embedding(b):
    table = b.pick(lambda v: len(v.shape) == 2)
    if table is None or b.rng.random() < 0.4:
        table = b.param((b.rng.randint(2, 5), b.dim()))
    shape = b.shape(b.rng.randint(1, 2))
    ids = b.indices(table.shape[0], shape)
    b.emit(f"F.embedding({ids.name}, {table.name})", shape + table.shape[1:], [table])
    return True


# ============================== normalization ==============================

def _norm(b):
    x = b.pick(lambda v: len(v.shape) >= 1 and v.shape[-1] >= 2)
    if x is None:
        return False
    weight = b.param(x.shape[-1:])
    if b.rng.random() < 0.5:
        bias = b.param(x.shape[-1:])
        b.emit(f"F.layer_norm({x.name}, {weight.name}, {bias.name})", x.shape, [x, weight, bias])
    else:
        b.emit(f"F.rms_norm({x.name}, {weight.name})", x.shape, [x, weight])
    return True


# ============================== attention ==============================

def _attention(which):
    def gen(b):
        q = b.pick(lambda v: len(v.shape) >= 2 and (v.grad or which == "attention_v_only"))
        if q is None:
            return False
        *batch, length, dim = q.shape
        causal = which == "attention_causal_rect" or b.rng.random() < 0.5
        if which == "attention_v_only" and causal and not b.allows("attention_causal_rect"):
            causal = False          # v's length is whatever v has: Lq == Lk is not guaranteed
        if which == "attention_causal_rect":
            keys = b.rng.choice([n for n in range(1, 5) if n != length])
        else:
            keys = length if causal or b.rng.random() < 0.5 else b.dim()
        value_dim = b.dim()
        if which == "attention_v_only":
            v = b.pick(lambda x: x.grad and len(x.shape) >= 2 and _broadcasts(tuple(batch), x.shape[:-2]))
            if v is None:
                return False
            keys, value_dim, batch = v.shape[-2], v.shape[-1], list(broadcast(tuple(batch), v.shape[:-2]))
            q = b.const((*batch, length, dim))
            k = b.const((*batch, keys, dim))
        elif keys == length and b.rng.random() < 0.5:
            k = v = q                           # self-attention: q, k and v are one value (fan-out)
        else:
            k = b.param((*batch, keys, dim))
            v = b.param((*batch, keys, value_dim))
        flag = ", is_causal=True" if causal else ""
        b.emit(f"F.scaled_dot_product_attention({q.name}, {k.name}, {v.name}{flag})",
               (*batch, length, v.shape[-1]), [q, k, v], saves_out=True)
        return True
    return gen


# ============================== losses ==============================

def _mse(b):
    x = b.pick(lambda v: v.grad)
    if x is None:
        return False
    target = b.pick(lambda v: v is not x and v.shape == x.shape) or b.const(x.shape)
    b.emit(f"F.mse_loss({x.name}, {target.name})", (), [x, target])
    return True


def _cross_entropy(options):
    def gen(b):
        logits = b.pick(lambda v: len(v.shape) >= 2 and v.shape[-1] >= 2 and v.grad)
        if logits is None:
            return False
        classes, shape = logits.shape[-1], logits.shape[:-1]
        extra = ""
        if options and b.rng.random() < 0.5:
            ids = b.indices(classes, shape,
                            f"T.tensor(np.where(rng.random({shape}) < 0.3, -100, rng.integers(0, {classes}, {shape})))")
            extra = ", ignore_index=-100"
        else:
            ids = b.indices(classes, shape)
        if options and (not extra or b.rng.random() < 0.5):
            extra += ", label_smoothing=0.1"
        b.emit(f"F.cross_entropy({logits.name}, {ids.name}{extra})", (), [logits])
        return True
    return gen


@dataclass(frozen=True)
class Gen:
    name: str
    family: str
    make: Callable              # make(builder) -> True when it emitted a statement
    weight: float = 1.0


GENERATORS = [
    Gen("tanh", "elementwise", _unary("{x}.tanh()", saves_out=True)),
    Gen("sigmoid", "elementwise", _unary("{x}.sigmoid()", saves_out=True, flags={"positive": True})),
    Gen("exp", "elementwise", _unary("{x}.exp()", saves_out=True, flags={"positive": True})),
    Gen("log", "elementwise", _unary("{x}.log()", needs_positive=True)),
    Gen("gelu", "elementwise", _unary("F.gelu({x})")),
    Gen("relu", "elementwise", _unary("{x}.relu()", saves_out=True, flags={"zeros": True})),
    Gen("pow", "elementwise", _pow),
    Gen("scalar", "elementwise", _scalar),
    Gen("pow_at_zero", "pow_at_zero", _pow_at_zero, weight=0.5),
    Gen("relu_gate_inf", "relu_gate_inf", _relu_gate_inf, weight=0.3),
    Gen("binary", "broadcast", _binary, weight=2.0),
    Gen("matmul", "matmul", _matmul, weight=1.5),
    Gen("matmul_1d", "matmul_1d", _matmul_1d, weight=0.5),
    Gen("reduce", "reduce", _reduce),
    Gen("softmax", "reduce", _softmax),
    Gen("view", "view", _view, weight=2.0),
    Gen("inplace", "inplace", _inplace("inplace")),
    Gen("inplace_view", "inplace_view", _inplace("inplace_view")),
    Gen("inplace_base_after_view", "inplace_base_after_view", _inplace("inplace_base_after_view")),
    Gen("concat", "concat", _concat, weight=0.7),
    Gen("masked_fill", "masked_fill", _masked_fill, weight=0.7),
    Gen("embedding", "embedding", _embedding, weight=0.5),
    Gen("norm", "norm", _norm),
    Gen("attention", "attention", _attention("attention")),
    Gen("attention_causal_rect", "attention_causal_rect", _attention("attention_causal_rect"), weight=0.4),
    Gen("attention_v_only", "attention_v_only", _attention("attention_v_only"), weight=0.4),
    Gen("mse_loss", "loss", _mse, weight=0.5),
    Gen("cross_entropy", "loss", _cross_entropy(False), weight=0.5),
    Gen("cross_entropy_options", "cross_entropy_options", _cross_entropy(True), weight=0.4),
]
