"""Network ops: normalizations, dropout, embedding, masked_fill, fused cross-entropy and fused attention."""
import numpy as np

from backend.tape.random import generator
from backend.tape import arrays as A
from backend.tape.arrays import unbroadcast
from backend.tape.registry import Op, per_element, register, size_of, tangent_sum


# ============================== normalization ==============================

def _layernorm_forward(attrs, x, weight, bias):
    mean = np.mean(x, axis=-1, keepdims=True)
    centered = x - mean
    rstd = 1 / np.sqrt(np.mean(centered * centered, axis=-1, keepdims=True) + attrs["eps"])
    rstd = rstd.astype(x.dtype, copy=False)
    return centered * rstd * weight + bias, {"mean": mean, "rstd": rstd}


def _layernorm_vjp(g, s, node):
    x_grad = weight_grad = bias_grad = None
    if node.needs[0] or node.needs[1]:       # β alone needs none of the saved values
        rstd = s["rstd"]
        x_hat = (s["x"] - s["mean"]) * rstd
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


def _layernorm_jvp(t, v, attrs):
    """dy = dx̂·γ + x̂·dγ + dβ, with dx̂ = (1/σ)·(dc − x̂·mean(x̂·dc)) and dc = dx − mean(dx): the same projection."""
    rstd = v["rstd"]
    x_hat = (v["x"] - v["mean"]) * rstd
    x_term = None
    if t[0] is not None:
        centered = t[0] - np.mean(t[0], axis=-1, keepdims=True)
        x_term = rstd * (centered - x_hat * np.mean(x_hat * centered, axis=-1, keepdims=True)) * v["weight"]
    return tangent_sum(x_term, None if t[1] is None else x_hat * t[1], t[2])


register(Op(
    "layernorm", "normalization", ("x", "weight", "bias"),
    saves={"x": ("x", "weight"), "weight": ("x",), "mean": ("x", "weight"), "rstd": ("x", "weight")},
    extras=("mean", "rstd"), forward=_layernorm_forward, vjp=_layernorm_vjp, jvp=_layernorm_jvp, flops=per_element(8, input_index=0),
    not_recordable="its vjp reads the saved per-row mean and 1/σ, which are functions of x that are not on the tape",
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


def _rmsnorm_jvp(t, v, attrs):
    rstd = v["rstd"]
    x_hat = v["x"] * rstd
    x_term = None
    if t[0] is not None:
        x_term = rstd * (t[0] - x_hat * np.mean(x_hat * t[0], axis=-1, keepdims=True)) * v["weight"]
    return tangent_sum(x_term, None if t[1] is None else x_hat * t[1])


register(Op(
    "rmsnorm", "normalization", ("x", "weight"),
    saves={"x": ("x", "weight"), "weight": ("x",), "rstd": ("x", "weight")},
    extras=("rstd",), forward=_rmsnorm_forward, vjp=_rmsnorm_vjp, jvp=_rmsnorm_jvp, flops=per_element(6, input_index=0),
    not_recordable="its vjp reads the saved per-row 1/rms, a function of x that is not on the tape",
    why="rmsnorm saves its input, γ and 1/rms: one projection (along x̂), no mean term.",
))

# ============================== randomness ==============================

def _dropout_forward(attrs, x):
    p = attrs["p"]
    mask = generator().random(x.shape) >= p
    return np.asarray((x * mask * (1.0 / (1.0 - p))).astype(x.dtype, copy=False)), {"mask": mask}


register(Op(
    "dropout", "random", ("x",), saves={"mask": ("x",)}, extras=("mask",),
    forward=_dropout_forward,
    vjp=lambda g, s, node: (g * A.constant(s["mask"]) * (1.0 / (1.0 - node.attrs["p"])),),
    jvp=lambda t, v, attrs: t[0] * v["mask"] * (1.0 / (1.0 - attrs["p"])),      # the mask this forward drew
    flops=per_element(2, input_index=0),
    why="dropout saves its bool mask (1 byte per element): the vjp zeroes the same elements.",
))

# ============================== lookup and masking ==============================

def _embedding_vjp(g, s, node):
    return None, A.scatter_add(g, A.constant(s["indices"]), node.shapes[1])   # a token seen twice gets both rows


register(Op(
    "embedding", "movement", ("indices", "weight"), saves={"indices": ("weight",)},
    forward=lambda attrs, indices, weight: weight[indices],
    vjp=_embedding_vjp, jvp=lambda t, v, attrs: t[1][v["indices"]], flops=lambda shapes, out, attrs: 0,
    why="embedding saves the token indices: its vjp scatter-adds rows into the table's gradient.",
))

register(Op(
    "masked_fill", "elementwise", ("x", "mask"), saves={"mask": ("x",)},
    forward=lambda attrs, x, mask: np.where(mask, np.asarray(attrs["value"], dtype=x.dtype), x),
    vjp=lambda g, s, node: (unbroadcast(A.where(~A.constant(s["mask"]), g), node.shapes[0]), None),
    jvp=lambda t, v, attrs: np.where(v["mask"], np.zeros((), dtype=t[0].dtype), t[0]),
    flops=per_element(1, input_index=0),
    why="masked_fill saves its bool mask: filled positions get no gradient.",
))

# ============================== fused loss ==============================

REDUCTIONS = ("mean", "sum", "none")


def _cross_entropy_forward(attrs, logits, target):
    """Per row i: (1 − ε)·(−log pᵢ[tᵢ]) + (ε/C)·Σ_c −log pᵢ[c], zero where tᵢ = ignore_index (torch's definition)."""
    classes = logits.shape[-1]
    ignored = target == attrs["ignore_index"]
    any_ignored = ignored.any()
    picked_target = np.where(ignored, 0, target) if any_ignored else target
    if picked_target.size and (picked_target.min() < 0 or picked_target.max() >= classes):
        bad = picked_target[(picked_target < 0) | (picked_target >= classes)][0]
        raise IndexError(f"Target {bad} is out of bounds.")
    shifted = logits - np.max(logits, axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
    losses = -np.take_along_axis(log_probs, picked_target[:, None], axis=-1)[:, 0]
    smoothing = attrs["label_smoothing"]
    if smoothing:
        losses = (1 - smoothing) * losses - (smoothing / classes) * np.sum(log_probs, axis=-1)
    if any_ignored:
        losses = np.where(ignored, 0, losses).astype(logits.dtype, copy=False)
    reduction = attrs["reduction"]
    if reduction == "none":
        out = losses
    elif reduction == "sum":
        out = np.sum(losses)
    else:
        kept = len(target) - int(np.count_nonzero(ignored)) if any_ignored else len(target)
        # every target ignored: torch's 0/0 = nan (its gradient is zero)
        out = np.sum(losses) / kept if kept else np.nan
    return np.asarray(out, dtype=logits.dtype), {"probs": np.exp(log_probs)}


def _cross_entropy_vjp(g, s, node):
    """The fused p − y, with y the (smoothed) target distribution; ignored rows get no gradient."""
    probs, target, attrs = s["probs"], s["target"], node.attrs
    ignored = target == attrs["ignore_index"]
    any_ignored = ignored.any()
    rows = np.arange(len(target))
    grad = probs.copy()
    smoothing = attrs["label_smoothing"]
    if smoothing:
        grad -= smoothing / probs.shape[-1]
    grad[rows, np.where(ignored, 0, target) if any_ignored else target] -= 1 - smoothing
    reduction = attrs["reduction"]
    if reduction == "none":
        scale = g[:, None]
    elif reduction == "sum":
        scale = g
    else:
        kept = len(target) - int(np.count_nonzero(ignored)) if any_ignored else len(target)
        scale = g / max(kept, 1)
    grad *= scale
    if any_ignored:
        grad[ignored] = 0
    return grad, None


def _cross_entropy_jvp(t, v, attrs):
    """Per row: d(−log pᵢ[tᵢ]) = −(dzᵢ[tᵢ] − ⟨pᵢ, dzᵢ⟩), mixed with the uniform term as the forward mixes."""
    probs, target, dz = v["probs"], v["target"], t[0]
    ignored = target == attrs["ignore_index"]
    picked = np.where(ignored, 0, target)
    d_log_probs = dz - np.sum(probs * dz, axis=-1, keepdims=True)
    losses = -np.take_along_axis(d_log_probs, picked[:, None], axis=-1)[:, 0]
    smoothing = attrs["label_smoothing"]
    if smoothing:
        losses = (1 - smoothing) * losses - (smoothing / probs.shape[-1]) * np.sum(d_log_probs, axis=-1)
    losses = np.where(ignored, np.zeros((), dtype=losses.dtype), losses)
    if attrs["reduction"] == "none":
        return losses
    if attrs["reduction"] == "sum":
        return np.asarray(np.sum(losses))
    return np.asarray(np.sum(losses) / max(len(target) - int(np.count_nonzero(ignored)), 1))


register(Op(
    "cross_entropy", "loss", ("logits", "target"),
    saves={"probs": ("logits",), "target": ("logits",)}, extras=("probs",),
    forward=_cross_entropy_forward, vjp=_cross_entropy_vjp, jvp=_cross_entropy_jvp, flops=per_element(5, input_index=0),
    not_recordable="its fused vjp reads the saved probabilities, a function of the logits that is not on the tape",
    why="cross_entropy saves the probabilities and targets: the fused vjp is p − y, no division by p.",
))

# ============================== fused attention ==============================

def _attention_probs(q, k, attrs, lse=None):
    """Scores → (unnormalized) probabilities; with saved row statistics `lse`, no second max/sum."""
    scores = (q @ np.swapaxes(k, -1, -2)) * np.asarray(attrs["scale"], dtype=q.dtype)
    if attrs["causal"]:
        # PyTorch aligns the causal mask top-left, also when L ≠ S: query i sees keys 0..i (ones(L, S).tril()).
        queries, keys = scores.shape[-2:]
        scores = np.where(np.triu(np.ones((queries, keys), dtype=bool), 1), -np.inf, scores)
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
    values = (probs @ v).astype(q.dtype, copy=False)
    # torch's fused kernel allocates its output like the query (empty_like: its memory order): a query that is a
    # model's [B, L, H, E] projection seen as [B, H, L, E] gives an output the usual permute(0, 2, 1, 3).reshape(B, L,
    # H·E) merges by a view, not a copy (torch 2.13's CPU flash kernel; a contiguous query, a contiguous output)
    out = np.empty_like(q) if values.shape == q.shape else np.empty_like(values)
    out[...] = values
    return out, {"lse": lse[..., 0].astype(q.dtype, copy=False)}


def _attention_vjp(g, s, node):
    """Recompute the probabilities from q, k and the row log-sum-exp; v and the output only for dq and dk."""
    attrs, needs = node.attrs, node.needs
    q, k = s["q"], s["k"]
    probs, _ = _attention_probs(q, k, attrs, s["lse"][..., None])
    kept = probs
    keep = None
    if attrs["dropout_p"] > 0:
        keep = _attention_mask(attrs, probs.shape) * (1.0 / (1.0 - attrs["dropout_p"]))
        kept = probs * keep
    q_grad = k_grad = v_grad = None
    if needs[2]:
        v_grad = unbroadcast(np.swapaxes(kept, -1, -2) @ g, node.shapes[2])
    if needs[0] or needs[1]:
        kept_grad = g @ np.swapaxes(s["v"], -1, -2)
        probs_grad = kept_grad * keep if keep is not None else kept_grad
        row_dot = np.sum(g * s["out"], axis=-1, keepdims=True)      # = Σ dP∘P, from the saved output
        scores_grad = probs * (probs_grad - row_dot) * np.asarray(attrs["scale"], dtype=q.dtype)
        if needs[0]:
            q_grad = unbroadcast(scores_grad @ k, node.shapes[0])
        if needs[1]:
            k_grad = unbroadcast(np.swapaxes(scores_grad, -1, -2) @ q, node.shapes[1])
    return q_grad, k_grad, v_grad


def _attention_jvp(t, v, attrs):
    """o = P̃·V with P̃ the (dropped-out) softmax of S = scale·QKᵀ: dS = scale·(dQ·Kᵀ + Q·dKᵀ),
    dP = P ⊙ (dS − ⟨P, dS⟩) per row, do = dP̃·V + P̃·dV, with the forward's own mask replayed."""
    q, k = v["q"], v["k"]
    probs, _ = _attention_probs(q, k, attrs, v["lse"][..., None])
    keep = None
    if attrs["dropout_p"] > 0:
        keep = _attention_mask(attrs, probs.shape) * (1.0 / (1.0 - attrs["dropout_p"]))
    kept = probs if keep is None else probs * keep
    scores_tangent = tangent_sum(None if t[0] is None else t[0] @ np.swapaxes(k, -1, -2),
                                 None if t[1] is None else q @ np.swapaxes(t[1], -1, -2))
    probs_term = None
    if scores_tangent is not None:
        scores_tangent = scores_tangent * np.asarray(attrs["scale"], dtype=q.dtype)
        probs_tangent = probs * (scores_tangent - np.sum(probs * scores_tangent, axis=-1, keepdims=True))
        if keep is not None:
            probs_tangent = probs_tangent * keep
        probs_term = probs_tangent @ v["v"]
    return tangent_sum(probs_term, None if t[2] is None else kept @ t[2])


def _attention_flops(shapes, out_shape, attrs):
    """Q·Kᵀ (2·L·S·E), P·V (2·L·S·Eᵥ) and the softmax (5 per score) per batch element; L ≠ S allowed."""
    *batch, queries, value_dim = out_shape
    keys, dim = shapes[1][-2], shapes[0][-1]
    scores = size_of(batch) * queries * keys
    return 2 * scores * dim + 2 * scores * value_dim + 5 * scores


register(Op(
    "attention", "attention", ("q", "k", "v"),
    saves={"q": ("q", "k", "v"), "k": ("q", "k", "v"), "v": ("q", "k"), "out": ("q", "k"),
           "lse": ("q", "k", "v")},
    extras=("lse",), forward=_attention_forward, vjp=_attention_vjp, jvp=_attention_jvp, flops=_attention_flops,
    not_recordable="its vjp recomputes the probabilities from the saved row log-sum-exp, which is not on the tape",
    why="efficient attention saves q, k, v, its output and one log-sum-exp per row: "
        "the seq×seq scores are recomputed in backward, never stored.",
))
