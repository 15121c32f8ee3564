"""Network ops: normalizations, dropout, embedding, masked_fill, fused cross-entropy and fused attention."""
import numpy as np

from backend.tape.random import generator
from backend.tape.registry import Op, per_element, register, size_of, unbroadcast


# ============================== normalization ==============================

def _layernorm_forward(attrs, x, weight, bias):
    mean = np.mean(x, axis=-1, keepdims=True)
    centered = x - mean
    rstd = 1 / np.sqrt(np.mean(centered * centered, axis=-1, keepdims=True) + attrs["eps"])
    rstd = rstd.astype(x.dtype, copy=False)
    return centered * rstd * weight + bias, {"mean": mean, "rstd": rstd}


def _layernorm_vjp(g, s, node):
    x, mean, rstd = s["x"], s["mean"], s["rstd"]
    x_hat = (x - mean) * rstd
    x_grad = weight_grad = bias_grad = None
    if node.needs[0]:
        # The projection: remove the adjoint's components along 1 (shift) and along x̂ (scale).
        g_hat = g * s["weight"]
        x_grad = rstd * (g_hat - np.mean(g_hat, axis=-1, keepdims=True)
                         - x_hat * np.mean(g_hat * x_hat, axis=-1, keepdims=True))
    if node.needs[1]:
        weight_grad = unbroadcast(g * x_hat, node.shapes[1])
    if node.needs[2]:
        bias_grad = unbroadcast(g, node.shapes[2])
    return x_grad, weight_grad, bias_grad


register(Op(
    "layernorm", "normalization", ("x", "weight", "bias"),
    saves={"x": ("x", "weight"), "weight": ("x",), "mean": ("x", "weight"), "rstd": ("x", "weight")},
    extras=("mean", "rstd"), forward=_layernorm_forward, vjp=_layernorm_vjp, flops=per_element(8, input_index=0),
    why="layernorm saves its input, γ and the per-row mean and 1/σ: its vjp projects out the 1 and x̂ directions.",
))


def _rmsnorm_forward(attrs, x, weight):
    rstd = 1 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + attrs["eps"])
    rstd = rstd.astype(x.dtype, copy=False)
    return x * rstd * weight, {"rstd": rstd}


def _rmsnorm_vjp(g, s, node):
    x, rstd = s["x"], s["rstd"]
    x_hat = x * rstd
    x_grad = weight_grad = None
    if node.needs[0]:
        g_hat = g * s["weight"]
        x_grad = rstd * (g_hat - x_hat * np.mean(g_hat * x_hat, axis=-1, keepdims=True))
    if node.needs[1]:
        weight_grad = unbroadcast(g * x_hat, node.shapes[1])
    return x_grad, weight_grad


register(Op(
    "rmsnorm", "normalization", ("x", "weight"),
    saves={"x": ("x", "weight"), "weight": ("x",), "rstd": ("x", "weight")},
    extras=("rstd",), forward=_rmsnorm_forward, vjp=_rmsnorm_vjp, flops=per_element(6, input_index=0),
    why="rmsnorm saves its input, γ and 1/rms: one projection (along x̂), no mean term.",
))

# ============================== randomness ==============================

def _dropout_forward(attrs, x):
    p = attrs["p"]
    mask = generator().random(x.shape) >= p
    return (x * mask * (1.0 / (1.0 - p))).astype(x.dtype, copy=False), {"mask": mask}


register(Op(
    "dropout", "random", ("x",), saves={"mask": ("x",)}, extras=("mask",),
    forward=_dropout_forward,
    vjp=lambda g, s, node: (g * s["mask"] * (1.0 / (1.0 - node.attrs["p"])),),
    flops=per_element(2, input_index=0),
    why="dropout saves its bool mask (1 byte per element): the vjp zeroes the same elements.",
))

# ============================== lookup and masking ==============================

def _embedding_vjp(g, s, node):
    weight_grad = np.zeros(node.shapes[1], dtype=g.dtype)
    np.add.at(weight_grad, s["indices"], g)       # scatter-add: a token seen twice gets both rows
    return None, weight_grad


register(Op(
    "embedding", "movement", ("indices", "weight"), saves={"indices": ("weight",)},
    forward=lambda attrs, indices, weight: weight[indices],
    vjp=_embedding_vjp, flops=lambda shapes, out, attrs: 0,
    why="embedding saves the token indices: its vjp scatter-adds rows into the table's gradient.",
))

register(Op(
    "masked_fill", "elementwise", ("x", "mask"), saves={"mask": ("x",)},
    forward=lambda attrs, x, mask: np.where(mask, np.asarray(attrs["value"], dtype=x.dtype), x),
    vjp=lambda g, s, node: (unbroadcast(np.where(s["mask"], 0, g).astype(g.dtype, copy=False),
                                        node.shapes[0]), None),
    flops=per_element(1, input_index=0),
    why="masked_fill saves its bool mask: filled positions get no gradient.",
))

# ============================== fused loss ==============================

def _cross_entropy_forward(attrs, logits, target):
    shifted = logits - np.max(logits, axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
    picked = np.take_along_axis(log_probs, target[:, None], axis=-1)
    return -np.mean(picked), {"probs": np.exp(log_probs)}


def _cross_entropy_vjp(g, s, node):
    probs, target = s["probs"], s["target"]
    grad = probs.copy()
    grad[np.arange(len(target)), target] -= 1         # the fused p − y
    return grad * (g / len(target)), None


register(Op(
    "cross_entropy", "loss", ("logits", "target"),
    saves={"probs": ("logits",), "target": ("logits",)}, extras=("probs",),
    forward=_cross_entropy_forward, vjp=_cross_entropy_vjp, flops=per_element(5, input_index=0),
    why="cross_entropy saves the probabilities and targets: the fused vjp is p − y, no division by p.",
))

# ============================== fused attention ==============================

def _attention_probs(q, k, attrs, lse=None):
    """Scores → (unnormalized) probabilities; with saved row statistics `lse`, no second max/sum."""
    scores = (q @ np.swapaxes(k, -1, -2)) * np.asarray(attrs["scale"], dtype=q.dtype)
    if attrs["causal"]:
        seq = scores.shape[-1]
        scores = np.where(np.triu(np.ones((seq, seq), dtype=bool), 1), -np.inf, scores)
    if lse is None:
        lse = np.max(scores, axis=-1, keepdims=True)
        lse = lse + np.log(np.sum(np.exp(scores - lse), axis=-1, keepdims=True))
    return np.exp(scores - lse), lse


def _attention_mask(attrs, shape):
    """The dropout mask, drawn from the generator state saved at forward: replays bit for bit."""
    replay = np.random.default_rng()
    replay.bit_generator.state = attrs["rng_state"]
    return replay.random(shape) >= attrs["dropout_p"]


def _attention_forward(attrs, q, k, v):
    probs, lse = _attention_probs(q, k, attrs)
    if attrs["dropout_p"] > 0:
        # Drawn from the live generator, whose state the caller put in attrs: backward replays it.
        keep = generator().random(probs.shape) >= attrs["dropout_p"]
        probs = probs * keep * (1.0 / (1.0 - attrs["dropout_p"]))
    out = (probs @ v).astype(q.dtype, copy=False)
    return out, {"lse": lse[..., 0].astype(q.dtype, copy=False)}


def _attention_vjp(g, s, node):
    attrs = node.attrs
    q, k, v = s["q"], s["k"], s["v"]
    probs, _ = _attention_probs(q, k, attrs, s["lse"][..., None])
    kept = probs
    keep = None
    if attrs["dropout_p"] > 0:
        keep = _attention_mask(attrs, probs.shape) * (1.0 / (1.0 - attrs["dropout_p"]))
        kept = probs * keep
    v_grad = np.swapaxes(kept, -1, -2) @ g
    kept_grad = g @ np.swapaxes(v, -1, -2)
    probs_grad = kept_grad * keep if keep is not None else kept_grad
    row_dot = np.sum(g * s["out"], axis=-1, keepdims=True)      # = Σ dP∘P, from the saved output
    scores_grad = probs * (probs_grad - row_dot) * np.asarray(attrs["scale"], dtype=q.dtype)
    return scores_grad @ k, np.swapaxes(scores_grad, -1, -2) @ q, v_grad


def _attention_flops(shapes, out_shape, attrs):
    *batch, seq, dim = shapes[0]
    return 4 * size_of(batch) * seq * seq * dim + 5 * size_of(batch) * seq * seq


register(Op(
    "attention", "attention", ("q", "k", "v"),
    saves={"q": ("q", "k", "v"), "k": ("q", "k", "v"), "v": ("q", "k"), "out": ("q", "k"),
           "lse": ("q", "k", "v")},
    extras=("lse",), forward=_attention_forward, vjp=_attention_vjp, flops=_attention_flops,
    why="efficient attention saves q, k, v, its output and one log-sum-exp per row: "
        "the seq×seq scores are recomputed in backward, never stored.",
))
