"""A backward that stopped at a step: the engine's exact RuntimeError text, where it happened, and how to fix it.

Today the one failure a spec can reach is the version-counter error (an in-place op overwrote a tensor an
earlier op saved for its backward); the trace then runs up to that step instead of the request failing.
"""
VERSION_ERROR = "modified by an inplace operation"


def is_version_error(error):
    return isinstance(error, RuntimeError) and VERSION_ERROR in str(error)


def describe_failure(message, steps, tape, tensors):
    """The document's `error`: the failing step (the last one recorded), its tape entry and op, the in-place
    writes to the tensors that entry saved (with their layer scopes), and the fix in words."""
    step = steps[-1]
    entry = tape[step["entry"]]
    saved_storages = {tensors[uid]["storage"] for uid in entry["saved"] if uid in tensors}
    writes = [{"tensor": t["id"], **write} for t in tensors.values() if t["storage"] in saved_storages
              for write in t.get("versions", ())]
    writers = sorted({w["scope"] for w in writes if w["scope"]})
    where = f" (in {', '.join(writers)})" if writers else ""
    fix = (f"{entry['backward']} needs a tensor that {entry['op']} saved in forward, but an in-place op{where} "
           f"overwrote it afterwards, so backward stops here. Fix it by going out of place (\"inplace\": false: "
           f"relu instead of relu_, x = x + 1 instead of x.add_(1)), or by reordering so the in-place op runs "
           f"before the op that saves the tensor. clone() after the save does not help; no_grad around the "
           f"write does not either.")
    return {"phase": "backward", "step": step["index"], "entry": entry["index"], "op": entry["op"],
            "backward": entry["backward"], "message": message, "writes": writes, "fix": fix}
