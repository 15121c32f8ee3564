"""The trace document: one JSON object per run, built from a recorder, in its expanded form.

What it reads from the recorder (ours or the torch importer's) is declared by backend/trace/records.py's RecordedRun.

The expanded form (docs/trace.v1.schema.json) is what Python readers work on; the server sends and stores it
packed as schema_version 2 (backend/trace/document_versions.py, docs/trace.schema.json)."""
import math

import numpy as np

from backend.trace.failure import describe_failure
from backend.trace.memory import live_bytes_by_kind, peak
from backend.trace.memory_kinds import MEMORY_KIND_NAMES
from backend.trace.peak import assign_scopes, explain_peak
from backend.trace.recompute import mark as mark_recomputable
from backend.trace.records import RecordedRun

EXPANDED_SCHEMA_VERSION = 1        # the expanded form is schema_version 1's layout


def _intervals(recorder: RecordedRun):
    """(storages, steps with live bytes by kind, tensors with freed steps, live, by_kind), every storage scoped:
    what the document and a peak without a document both stand on."""
    storages = sorted(recorder.storages.values(), key=lambda s: s["id"])
    steps = recorder.steps or [{"index": 0, "phase": "forward", "entry": None}]
    live, by_kind = live_bytes_by_kind(storages, len(steps))
    for step in steps:
        step["live_bytes"] = int(live[step["index"]])
        step["by_kind"] = {kind: int(by_kind[kind][step["index"]]) for kind in MEMORY_KIND_NAMES}
    tensors = sorted(recorder.tensors.values(), key=lambda t: t["id"])
    if _mark_saved_for_second_backward(recorder.tape, tensors, storages):
        kept = live_bytes_by_kind([s for s in storages if s.get("saved_for_backward_2")], len(steps))[0]
        for step in steps:
            step["recorded_backward_bytes"] = int(kept[step["index"]])
    freed_at = {s["id"]: s["freed"] for s in storages}
    for t in tensors:
        t["freed"] = freed_at[t["storage"]]
    assign_scopes(tensors, storages)
    return storages, steps, tensors, live, by_kind


def build_document(recorder: RecordedRun, spec, engine_version, loss, cuts=(), backward_error=None):
    """The document of a recorded run; `cuts` are the model's detach / no_grad layers ({path, type}) and
    `backward_error` the engine's text when backward stopped at the last step (backend/trace/run.py)."""
    recorder.values.fill()
    # which entries backward reached, unless it stopped short (then every saver counts as reached)
    mark_recomputable(recorder.tape, recorder.tensors.values(), None if backward_error else recorder.sweep)
    storages, steps, tensors, live, by_kind = _intervals(recorder)
    peak_bytes, peak_step = peak(live)
    forward_end = max((s["index"] for s in steps if s["phase"] == "forward"), default=0)
    at_end = held_after(storages)
    document = {
        "schema_version": EXPANDED_SCHEMA_VERSION,
        "engine_version": engine_version,
        "spec": spec,
        "loss": loss if math.isfinite(loss) else None,      # JSON has no inf or NaN
        "loss_text": f"{loss:.6g}",
        "layers": _layers(spec),
        "tensors": tensors,
        "storages": storages,
        "tape": recorder.tape,
        "steps": steps,
        "sweep": recorder.sweep,
        "dependencies": {str(k): v for k, v in recorder.dependencies.items()},
        "graph": graph_of(recorder.tape, tensors),
        "blocks": recorder.blocks,
        "cuts": _cuts(cuts, recorder.tape, tensors),
        "error": describe_failure(backward_error, steps, recorder.tape, recorder.tensors) if backward_error else None,
        "summary": {
            "peak_bytes": peak_bytes,
            "peak_step": peak_step,
            "saved_bytes": _saved_bytes(recorder.tape, recorder.tensors, storages, steps, recorder.sweep),
            "by_kind_at_peak": {kind: int(by_kind[kind][peak_step]) for kind in MEMORY_KIND_NAMES},
            # What the next training step starts from: params, grads and the optimizer's state (momentum, m, v).
            "by_kind_at_end": at_end,
            "forward_end_step": forward_end,
            "steps": len(steps),
            "entries": len(recorder.tape),
            "forward_flops": sum(e["flops"] for e in recorder.tape if e["phase"] == "forward"),
            "measured_peak_bytes": None,
            "micro_batches": spec.get("accumulate", 1),
            "resident": resident_split(tensors, by_kind, at_end),
            "loss_scale": recorder.scaler,
        },
    }
    recorded = [e for e in recorder.tape if e.get("recorded_in") == "backward"]
    if recorded:
        document["summary"]["recorded_backward"] = {
            "entries": len(recorded),
            "saved_bytes": int(sum(s["nbytes"] for s in storages if s.get("saved_for_backward_2"))),
            "peak_saved_bytes": max(s["recorded_backward_bytes"] for s in steps),
        }
    document["summary"]["peak"] = explain_peak(document)
    return document


def held_after(storages):
    """Bytes by kind of the storages still held after the last step (never freed): what the next training step
    starts from. A temporary the last op made and the step let go of when it returned (the optimizer's last
    `denom`) is alive at the last step, not after it."""
    at_end = dict.fromkeys(MEMORY_KIND_NAMES, 0)
    for storage in storages:
        if storage["freed"] is None:
            at_end[storage["kind"]] += storage["nbytes"]
    return at_end


def resident_split(tensors, by_kind, at_end):
    """The training state by part: master weights, their low-precision copies (the most alive at once: they live
    from the forward to the backward that reads them), gradients and optimizer state (after the step, what the next step
    starts from: `at_end`, held_after's), and those that persist per parameter element (the tape chapter's 16 B/param
    for fp32 Adam)."""
    params = sum(int(np.prod(t["shape"])) for t in tensors if t["kind"] == "param" and not t.get("view"))
    persistent = sum(at_end[kind] for kind in ("param", "grad", "optimizer"))
    return {"params": params,
            "master_weights_bytes": at_end["param"],
            "weight_copies_bytes": int(by_kind["weight_copy"].max(initial=0)),
            "grads_bytes": at_end["grad"],
            "optimizer_state_bytes": at_end["optimizer"],
            "bytes_per_param": persistent / params if params else None}


def peak_of(recorder: RecordedRun, spec):
    """The document's summary.peak_bytes and summary.peak for a recorder, without building the document."""
    storages, steps, tensors, live, _ = _intervals(recorder)
    peak_bytes, peak_step = peak(live)
    core = {"spec": spec, "tensors": tensors, "storages": storages, "tape": recorder.tape, "steps": steps,
            "summary": {"peak_step": peak_step}}
    return peak_bytes, explain_peak(core)


def _mark_saved_for_second_backward(tape, tensors, storages):
    """Under create_graph, the first backward's intermediates are saved for the second: mark each storage allocated
    by a recorded vjp op (`recorded_in: "backward"`; a view's storage is its base's) that some entry saves.
    Returns whether the tape has recorded vjp ops at all."""
    recorded = {e["index"] for e in tape if e.get("recorded_in") == "backward"}
    if not recorded:
        return False
    by_id = {s["id"]: s for s in storages}
    allocated = {t["storage"] for t in tensors if t["produced_by"] in recorded and not t.get("view")}
    for tensor in tensors:
        if tensor["storage"] in allocated and tensor["saved_by"]:
            by_id[tensor["storage"]]["saved_for_backward_2"] = True
    return True


def _saved_bytes(tape, tensors, storages, steps, sweep):
    """The most bytes of unique storages the forward tape holds for backward at once, parameters included.

    A storage is held from the forward step that first saves it to the backward step that last reads it (or until it
    is freed, when no backward node reads it): a buffer that outlives what autograd keeps of it (a pipeline stage's
    receive buffer, alive all step, saved by one micro-batch) is counted while it is held, not while it exists.
    One micro-batch: everything it saved, alive together at the end of forward (saved_tensors_hooks' count). With
    micro-batches (`accumulate`, a pipeline's), each backward lets go of its saves: the figure is the most held at
    once (the largest micro-batch's, or a pipeline stage's micro-batches in flight), with the parameters once,
    never their sum: a subset of what is alive at one step, so never above the peak.
    """
    saved_at = {}
    for step in steps:
        if step["phase"] == "forward" and step["entry"] is not None:
            saved_at.setdefault(step["entry"], step["index"])
    first_save = {}
    for entry in tape:
        if entry["phase"] != "forward":
            continue
        for uid in entry["saved"]:
            storage = tensors[uid]["storage"]
            first_save[storage] = min(first_save.get(storage, len(steps)), saved_at.get(entry["index"], 0))
    last_read = {}
    for item in sweep:
        for uid in item["reads"]:
            storage = tensors[uid]["storage"]
            last_read[storage] = max(last_read.get(storage, item["step"]), item["step"])
    held = []
    for s in storages:
        if s["id"] not in first_save:
            continue
        born = max(s["born"], first_save[s["id"]])
        freed = last_read.get(s["id"], s["freed"])
        if s["freed"] is not None and freed is not None:
            freed = min(freed, s["freed"])
        if freed is None or born <= freed:
            held.append({**s, "born": born, "freed": freed})
    live, _ = live_bytes_by_kind(held, len(steps))
    return int(live.max(initial=0))


def graph_of(tape, tensors):
    """Nodes are tape entries and the leaves they read; edges are tensors, from producer to consumer."""
    by_id = {t["id"]: t for t in tensors}
    nodes = [{"id": f"e{e['index']}", "entry": e["index"], "op": e["op"], "family": e["family"],
              "scope": e["scope"]} for e in tape]
    leaves, edges = {}, []
    for entry in tape:
        for uid in entry["inputs"]:
            tensor = by_id[uid]
            if tensor["produced_by"] is None:
                source = f"t{uid}"
                leaves.setdefault(uid, {"id": source, "tensor": uid, "kind": tensor["kind"], "name": tensor["name"]})
            else:
                source = f"e{tensor['produced_by']}"
            edges.append({"source": source, "target": f"e{entry['index']}", "tensor": uid,
                          "nbytes": tensor["nbytes"]})
    return {"nodes": nodes, "leaves": list(leaves.values()), "edges": edges}


def _within(scope, path):
    return scope is not None and (scope == path or scope.startswith((path + ".", path + "[")))


def _cuts(cuts, tape, tensors):
    """Each detach / no_grad layer with what the tape holds from inside it: under no_grad the ops ran (their
    tensors are here) but recorded no entry and saved nothing; a detach is a view, no entry of its own."""
    described = []
    by_id = {t["id"]: t for t in tensors}
    for cut in cuts:
        inside = [entry for entry in tape if _within(entry["scope"], cut["path"])]
        made = [t for t in tensors if _within(t["scope"], cut["path"])]
        saved = {by_id[uid]["storage"]: by_id[uid]["nbytes"] for entry in inside for uid in entry["saved"]}
        described.append({**cut, "entries": len(inside), "saved_bytes": int(sum(saved.values())),
                          "tensors": len(made)})
    return described


def _layers(spec):
    """Top-level layers with their paths and display names (user text: the browser shows it as text)."""
    return [{"path": f"layers[{i}]", "type": layer["type"], "name": layer.get("name", layer["type"])}
            for i, layer in enumerate(spec["layers"])]
