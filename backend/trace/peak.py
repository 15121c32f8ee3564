"""Why the peak is where it is: the storages alive at a step grouped by scope × kind, and one sentence saying so.

Every storage gets a scope (the layer path that owns it: an activation's op scope, a parameter's module, a grad's
or an optimizer buffer's parameter), so the page can group any step the same way from the storages' intervals.
"""
from backend.trace.memory import holders_at
from backend.trace.memory_kinds import MEMORY_KIND_WORDS, SHARDING_KINDS, SINGULAR_KINDS

OPTIMIZER_STATE = {"adam": "Adam's m and v", "adamw": "AdamW's m and v", "sgd": "SGD's momentum buffers",
                   "adam8bit": "8-bit Adam's one-byte m and v with their block absmaxes"}


def assign_scopes(tensors, storages):
    """Give each storage record the scope of the first tensor over it (set as storage["scope"])."""
    by_id = {t["id"]: t for t in tensors}
    first = {}
    for tensor in tensors:                       # sorted by id: the first tensor over a storage created it
        first.setdefault(tensor["storage"], tensor)
    for storage in storages:
        tensor = first.get(storage["id"])
        # a storage no tensor owns (an imported run's workspace) keeps the scope its recorder gave it
        storage["scope"] = _scope_of(tensor, by_id) if tensor is not None else storage.get("scope") or "other"


def _scope_of(tensor, by_id, depth=0):
    kind = tensor["kind"]
    if kind == "input":
        return "input"
    if kind == "grad" and tensor.get("grad_of") in by_id and depth < 4:
        return _scope_of(by_id[tensor["grad_of"]], by_id, depth + 1)
    if tensor.get("recompute_of") in by_id and depth < 4:
        return _scope_of(by_id[tensor["recompute_of"]], by_id, depth + 1)
    if tensor.get("scope"):
        return tensor["scope"]
    if kind in ("param", "optimizer", "grad"):
        # "layers[0].weight", "layers[0].weight.grad", "layers[4].weight.m": the module is the path before the
        # parameter's own name
        parts = tensor["name"].split(".")
        keep = len(parts) - (2 if kind != "param" and len(parts) > 2 else 1)
        return ".".join(parts[:keep]) or "model"
    return "loss" if tensor.get("name", "").startswith("loss") else "model"


def explain_peak(document):
    """summary.peak: where the peak is, what holds it, and the verdict sentence."""
    summary = document["summary"]
    step = summary["peak_step"]
    record = document["steps"][step]
    holders = holders_at(step, document["tensors"], document["storages"])
    recompute_steps = {s["index"] for s in document["steps"] if s["phase"] == "recompute"}
    storages = {s["id"]: s for s in document["storages"]}
    recomputed = sum(storages[sid]["nbytes"] for group in holders if group["kind"] == "activation"
                     for sid in group["storages"] if storages[sid]["born"] in recompute_steps)
    peak = {"step": step, "phase": record["phase"], "live_bytes": record["live_bytes"],
            "by_kind": dict(record["by_kind"]), "recomputed_bytes": recomputed, "holders": holders,
            "checkpointed": bool(recompute_steps)}
    if "recorded_backward_bytes" in record:
        peak["recorded_backward_bytes"] = record["recorded_backward_bytes"]
    peak["param_grad_bytes"] = _param_grad_bytes(holders, document)
    peak["verdict"] = verdict(peak, document)
    return peak


def verdict(peak, document):
    """One plain sentence: where the peak is, what holds it, and whether checkpointing can lower it."""
    by_kind, total = peak["by_kind"], max(peak["live_bytes"], 1)
    phase = peak["phase"]
    if phase == "optimizer":
        optimizer = document["spec"]["optimizer"]["type"]
        state = OPTIMIZER_STATE.get(optimizer, "the optimizer's state")
        base = (f"the parameters ({format_bytes(by_kind['param'])}) and their grads "
                f"({format_bytes(by_kind['grad'])})")
        if by_kind["optimizer"]:
            held = f"{state} ({format_bytes(by_kind['optimizer'])}) sit on top of {base}"
        else:
            held = f"{base} are all that is left"
        return (f"The peak is at the optimizer step: {held}; checkpointing cannot lower it, "
                f"only a leaner optimizer or fewer parameters can.")
    sentence = _verdict_by_kind(peak, document) + _sharding(peak, document)
    recorded = peak.get("recorded_backward_bytes")
    if recorded:
        share = recorded / max(peak["live_bytes"], 1)
        sentence += (f" {format_bytes(recorded)} ({share:.0%}) of it are the first backward's intermediates saved "
                     f"for the second: with create_graph the backward's own ops were recorded, and what they saved "
                     f"lives until backward-2 reaches them.")
    return sentence


def _verdict_by_kind(peak, document):
    by_kind, total = peak["by_kind"], max(peak["live_bytes"], 1)
    where = _where(peak, document)
    dominant = max(by_kind, key=lambda kind: by_kind[kind])
    share = by_kind[dominant] / total
    if dominant == "activation":
        layer, held = _largest_layer(peak["holders"], "activation")
        share_word = "most of them" if held > by_kind["activation"] / 2 else "the largest share"   # words that fit
        most = f", {share_word} in {layer} ({format_bytes(held)})" if layer else ""
        recomputed = (f", {format_bytes(peak['recomputed_bytes'])} of them recomputed in backward"
                      if peak["recomputed_bytes"] else "")
        if "recorded_backward_bytes" in peak:
            lever = "the planner does not yet plan checkpoints under create_graph, but a smaller batch or fewer layers lowers it"
        else:
            lever = "another schedule may lower it" if peak["checkpointed"] else "checkpointing can lower it"
        return (f"The peak is {where}, where activations kept for backward ({format_bytes(by_kind['activation'])}, "
                f"{share:.0%} of {format_bytes(total)}{recomputed}) {_weigh(share)}{most}; {lever}.")
    activations = by_kind["activation"]
    tail = ("checkpointing can trim the activations' part" if activations and activations >= 0.2 * total
            else "checkpointing can do little here")
    return (f"The peak is {where}, where {MEMORY_KIND_WORDS[dominant]} ({format_bytes(by_kind[dominant])}, {share:.0%} of "
            f"{format_bytes(total)}) {_weigh(share, dominant)}{_which_gradients(peak) if dominant == 'grad' else ''}; "
            f"{tail} ({format_bytes(activations)} of activations).")


def _which_gradients(peak):
    """Which gradients: in backward most are the activations' (an adjoint each, the size of its activation, passed
    from node to node and gone once used), not the parameters' .grad, which "gradients" alone suggests."""
    params = peak["param_grad_bytes"]
    carried = peak["by_kind"]["grad"] - params
    if not carried:
        return ": all of them the parameters' .grad"
    return (f": {format_bytes(carried)} of them the activations' gradients backward is passing along (each the size of "
            f"its activation, gone once used), {format_bytes(params)} the parameters' .grad")


def _param_grad_bytes(holders, document):
    """Of the gradients held at a step, the bytes of the parameters' own (.grad), by the storages' first tensors."""
    kinds = {t["id"]: t["kind"] for t in document["tensors"]}
    params = {t["storage"] for t in document["tensors"] if t["kind"] == "grad" and kinds.get(t.get("grad_of")) == "param"}
    nbytes = {s["id"]: s["nbytes"] for s in document["storages"]}
    return sum(nbytes[sid] for group in holders if group["kind"] == "grad" for sid in group["storages"] if sid in params)


def _sharding(peak, document):
    """A rank's peak in its sharding's words: which of the memory only sharding holds is there, on top of what."""
    if "rank" not in document:
        return ""
    by_kind = peak["by_kind"]
    held = [f"{MEMORY_KIND_WORDS[kind]} ({format_bytes(by_kind[kind])}{_units(peak, kind)})"
            for kind in sorted(SHARDING_KINDS, key=lambda kind: -by_kind.get(kind, 0)) if by_kind.get(kind)]
    sharded = any(storage.get("shard_role") == "sharded_param" for storage in document["storages"])
    params = "its parameter shards" if sharded else "its whole parameters"       # FSDP2 and TP; DDP and ZeRO-1
    base = (f"{params} ({format_bytes(by_kind['param'])}), gradients ({format_bytes(by_kind['grad'])}) "
            f"and activations ({format_bytes(by_kind['activation'])})")
    if not held:
        return f" Rank {document['rank']} holds no unsharded memory there: {base}."
    return f" Rank {document['rank']} holds {' and '.join(held)} there, on top of {base}."


def _units(peak, kind):
    """The layers holding a sharding kind at the peak (FSDP2's units), largest first, at most 3."""
    totals = {}
    for group in peak["holders"]:
        if group["kind"] == kind:
            totals[group["scope"]] = totals.get(group["scope"], 0) + group["bytes"]
    names = sorted(totals, key=lambda name: -totals[name])
    return (": " + ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")) if names else ""


def _weigh(share, kind="activation"):
    """"dominate" only for more than half; the largest kind under half is just that."""
    if kind in SINGULAR_KINDS:
        return "dominates" if share > 0.5 else "is the largest part"
    return "dominate" if share > 0.5 else "are the largest part"


def _largest_layer(holders, kind):
    """The top-level layer ("layers[0]" for "layers[0][3][1]" or "layers[0].attn") holding the most of `kind`."""
    totals = {}
    for group in holders:
        if group["kind"] == kind:
            layer = group["scope"].split("]")[0] + "]" if "]" in group["scope"] else group["scope"]
            totals[layer] = totals.get(layer, 0) + group["bytes"]
    if not totals:
        return None, 0
    layer = max(totals, key=lambda name: (totals[name], name))
    return layer, totals[layer]


def _where(peak, document):
    record = document["steps"][peak["step"]]
    entry = record.get("entry")
    if entry is None:
        return f"at step {peak['step']} ({peak['phase']})"
    op = document["tape"][entry]
    name = op["backward"] if peak["phase"] in ("backward", "backward-2") else op["op"]
    scope = f" in {op['scope']}" if op.get("scope") else ""
    phase = {"recompute": "while recomputing"}.get(peak["phase"], f"in {peak['phase']}")
    return f"{phase} at step {peak['step']} ({name}{scope})"


def format_bytes(nbytes, digits=None):
    """As the page writes bytes: 512 B, 49.3 KiB, 1.4 MiB (no decimals from 100 up); with `digits`, up to that many
    decimals, trailing zeros dropped, as the page's formatBytes(bytes, {digits}) (1.13 MiB)."""
    value, unit = float(nbytes), 0
    units = ("B", "KiB", "MiB", "GiB")
    while abs(value) >= 1024 and unit < len(units) - 1:
        value /= 1024
        unit += 1
    if digits is not None:
        text = f"{value:,.{0 if unit == 0 else digits}f}"
        return f"{text.rstrip('0').rstrip('.') if '.' in text else text} {units[unit]}"
    decimals = 0 if unit == 0 or abs(value) >= 100 else 1
    return f"{value:.{decimals}f} {units[unit]}"
