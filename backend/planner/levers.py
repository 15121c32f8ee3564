"""Levers: the changes that would lower a run's peak, each one executed by the engine, never guessed.

Checkpoint levers are the planner's schedules on one base run (every heuristic, and the integer program's optimum
at up to three budgets of the Pareto frontier the schedules chart draws, executed); spec levers (SGD
instead of Adam, half the batch, half the sequence, efficient attention, float16, freezing the first or the
last half of the parameter blocks) are traced as edited specs
under the same checkpoint request. Each lever reports its traced peak, the change against the current peak,
the recompute FLOPs it costs and whether the parameters' gradients are bitwise those of the current run.
Ranked by bytes saved per extra FLOP; a lever that does not lower the peak says why, in its own run's words.
"""
import copy

import numpy as np

from backend.models import SpecError, validate_spec
from backend.models.freeze import freeze_half, parameter_blocks
from backend.planner import HEURISTICS, Planner, PolicyError, validate
from backend.planner.schedules import SolveLimits
from backend.trace.peak import format_bytes
from backend.trace.run import record


def levers(spec, checkpoint=None, limits=SolveLimits()):
    """{current: {peak_bytes, checkpoint}, levers: [...]} for a normalized spec and a raw checkpoint request."""
    planner = Planner(spec, limits)
    n_blocks, activations = planner.base.n_blocks, set(planner.entry_activations)
    current_request = checkpoint or {"policy": "none"}
    current = planner.schedule(validate(current_request, n_blocks, activations))
    current_peak = current["executed_peak_bytes"]
    current_flops = current["recompute_flops"]
    found = []
    heuristic_points = set()
    for heuristic in HEURISTICS:
        if heuristic.get("k", 1) > n_blocks or _same_checkpoint(heuristic, current_request):
            continue
        point = planner.schedule(validate({**heuristic, "preserve_rng_state": True}, n_blocks, activations))
        heuristic_points.add((point["predicted_peak_bytes"], point["recompute_flops"]))
        found.append(_lever(f"checkpoint: {_policy_text(heuristic)}", _checkpoint_description(heuristic),
                            {"checkpoint": heuristic}, point["document"], current_peak, current_flops,
                            point["recompute_flops"], point["grads_match"]))
    for budget in optimal_budgets(planner.pareto(), current_peak, heuristic_points):
        request = {"policy": "optimal", "budget_bytes": budget}
        point = planner.schedule(validate({**request, "preserve_rng_state": True}, n_blocks, activations))
        found.append(_lever(f"checkpoint: optimal ≤ {format_bytes(budget, digits=2)}",    # as the page labels it
                            "the least recompute whose predicted peak fits this budget (the integer program over "
                            "recompute units; a point on the Pareto frontier)",
                            {"checkpoint": request}, point["document"], current_peak, current_flops,
                            point["recompute_flops"], point["grads_match"]))
    for name, description, changed, *marks in spec_changes(spec):
        try:
            document, grads = _run(changed, checkpoint)
        except PolicyError:                  # a manual pick names tensors the changed model does not have
            document, grads = _run(changed, None)
            description += " (traced without the manual recompute set, whose tensors this model does not have)"
        match = _grads_equal(planner.base_grads, grads) if _comparable(spec, changed) else None
        found.append(_lever(name, description, {"spec": changed, **(marks[0] if marks else {})}, document,
                            current_peak, current_flops,
                            document.get("schedule", {}).get("recompute_flops", 0), match))
    return {"current": {"peak_bytes": current_peak, "checkpoint": current_request,
                        "recompute_flops": int(current_flops), "verdict": current["document"]["summary"]["peak"]["verdict"]},
            "levers": rank(found)}


MAX_SPEC_LEVERS = 7         # what spec_changes can return: the work cap prices a levers request by it
MAX_OPTIMAL_LEVERS = 3      # frontier points run as levers; priced with the spec levers


def optimal_budgets(frontier, current_peak, heuristic_points):
    """Budgets of up to MAX_OPTIMAL_LEVERS frontier points that would lower the peak and that no heuristic schedule
    already reaches, spread along the frontier from the least recompute to the lowest peak."""
    lowering = [p for p in sorted(frontier, key=lambda p: p["recompute_flops"])
                if p["predicted_peak_bytes"] < current_peak
                and (p["predicted_peak_bytes"], p["recompute_flops"]) not in heuristic_points]
    if len(lowering) <= MAX_OPTIMAL_LEVERS:
        return [p["budget_bytes"] for p in lowering]
    last = len(lowering) - 1
    picked = sorted({round(i * last / (MAX_OPTIMAL_LEVERS - 1)) for i in range(MAX_OPTIMAL_LEVERS)})
    return [lowering[i]["budget_bytes"] for i in picked]


def spec_changes(spec):
    """(lever, description, changed spec[, marks]) for each spec edit that applies to this model; marks are extra
    keys of the lever ({"freeze": "first"} tells the page which two levers to set side by side)."""
    changes = []
    optimizer = spec["optimizer"]
    if optimizer["type"] in ("adam", "adamw"):
        changes.append(("SGD instead of Adam", "plain SGD keeps no state per parameter: Adam's m and v go",
                        _edited(spec, lambda s: s.update(optimizer={"type": "sgd", "lr": optimizer.get("lr", 0.1)}))))
    if spec["batch"] >= 2:
        changes.append(("half the batch", f"batch {spec['batch']} → {spec['batch'] // 2}: every activation halves",
                        _edited(spec, lambda s: s.update(batch=s["batch"] // 2))))
    source = spec["input"]
    if source["kind"] == "tokens" and source["seq"] >= 2:
        changes.append(("half the sequence", f"seq {source['seq']} → {source['seq'] // 2}: activations halve, "
                                             "attention's seq×seq scores quarter",
                        _edited(spec, lambda s: s["input"].update(seq=s["input"]["seq"] // 2))))
    if _any_layer(spec["layers"], lambda layer: layer.get("impl") == "naive"):
        changes.append(("efficient attention", "fused attention recomputes the seq×seq scores in backward "
                                               "instead of saving them",
                        _edited(spec, lambda s: _each_layer(s["layers"], _efficient))))
    if spec["dtype"] == "float32":
        changes.append(("float16 instead of float32", "every tensor takes 2 bytes per element instead of 4",
                        _edited(spec, lambda s: s.update(dtype="float16"))))
    # An edit this model refuses (float16 under mixed precision's float32 master weights, freezing the only
    # trainable half) is not a lever for it.
    return [change for change in changes + _freeze_changes(spec) if change[2] is not None]


def _freeze_changes(spec):
    """Freeze the first half of the parameter blocks, or the last half: the same count of frozen weights, very
    different peaks (torch prunes the graph only up to the first parameter that still needs grad)."""
    first, last = freeze_half(spec, "first"), freeze_half(spec, "last")
    if first is None:
        return []
    half = parameter_blocks(spec) // 2
    return [
        ("freeze the first half", f"the first {half} blocks with parameters frozen: nothing before the first "
                                  "parameter that still needs grad is recorded or saved", _accepted(first),
         {"freeze": "first"}),
        ("freeze the last half", f"the last {half} blocks with parameters frozen: no grads or optimizer state for "
                                 "them, but the gradient still flows through them to the first half, so their "
                                 "activations are still saved", _accepted(last), {"freeze": "last"}),
    ]


def rank(found):
    """Levers that lower the peak first, by bytes saved per extra FLOP (free ones by bytes saved); then the rest."""
    lowering = [lever for lever in found if lever["delta_bytes"] < 0]
    other = [lever for lever in found if lever["delta_bytes"] >= 0]
    lowering.sort(key=lambda lever: (lever["delta_bytes"] / (max(lever["extra_flops"], 0) + 1), lever["lever"]))
    other.sort(key=lambda lever: (lever["delta_bytes"], lever["lever"]))
    return lowering + other


def _lever(name, description, change, document, current_peak, current_flops, recompute_flops, grads_match):
    peak = document["summary"]["peak_bytes"]
    lever = {"lever": name, "description": description, **change, "peak_bytes": peak,
             "delta_bytes": peak - current_peak, "recompute_flops": int(recompute_flops),
             "extra_flops": int(recompute_flops - current_flops), "grads_match": grads_match}
    if peak >= current_peak:
        lever["reason"] = document["summary"]["peak"]["verdict"]    # what holds the peak under this lever
    if document["loss"] is None:
        lever["warning"] = (f"the loss of this run is {document['loss_text']}: the change fits in memory but "
                            "breaks the numbers")
    return lever


def _run(spec, checkpoint):
    """(document, parameter gradients) of an edited spec, under the same checkpoint request when there is one."""
    if not checkpoint or checkpoint.get("policy") == "none":
        return record(spec, values=False)      # a lever reads the summary and the loss, not tensor values
    planner = Planner(spec)
    request = validate(checkpoint, planner.base.n_blocks, set(planner.entry_activations))
    schedule = planner.schedule(request)
    document = schedule.pop("document")
    document["schedule"] = schedule
    return document, planner.base_grads


def _comparable(spec, changed):
    """Gradients are the same quantity when the data and shapes are: not after halving the batch or sequence."""
    return spec["batch"] == changed["batch"] and spec["input"] == changed["input"]


def _grads_equal(ours, theirs):
    return all(name in theirs and (a is None) == (theirs[name] is None)
               and (a is None or (a.shape == theirs[name].shape and np.array_equal(a, theirs[name])))
               for name, a in ours.items())


def _same_checkpoint(heuristic, request):
    params = {k: v for k, v in request.items() if k not in ("policy", "preserve_rng_state")}
    return heuristic["policy"] == request.get("policy") and {k: v for k, v in heuristic.items() if k != "policy"} == params


def _policy_text(heuristic):
    params = ", ".join(f"{k}={v}" for k, v in heuristic.items() if k != "policy")
    return heuristic["policy"] + (f" ({params})" if params else "")


def _checkpoint_description(heuristic):
    policy = heuristic["policy"]
    if policy == "none":
        return "save every activation backward reads: no recompute"
    if policy == "every_k":
        return f"checkpoint every {heuristic['k']} block(s): keep their inputs, re-run them in backward"
    if policy == "sqrt":
        return "checkpoint √n segments of blocks: keep their inputs, re-run them in backward"
    return "recompute the cheap-per-byte ops (elementwise, softmax, dropout, attention scores), keep the matmuls"


def _edited(spec, edit):
    changed = copy.deepcopy(spec)
    edit(changed)
    return _accepted(changed)


def _accepted(changed):
    """The edited spec normalized and within the caps like any traced spec, or None when the model refuses it."""
    try:
        return validate_spec(changed)
    except SpecError:
        return None


def _any_layer(layers, test):
    return any(test(layer) or _any_layer(layer.get("layers", []), test) for layer in layers)


def _each_layer(layers, edit):
    for layer in layers:
        edit(layer)
        _each_layer(layer.get("layers", []), edit)


def _efficient(layer):
    if layer.get("impl") == "naive":
        layer["impl"] = "efficient"
