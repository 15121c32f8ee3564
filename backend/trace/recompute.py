"""Which forward outputs may be recomputed in backward instead of saved, and why not when they may not.

One rule for everyone: the document marks each forward entry with it (the browser's manual picks read the
mark), and the planner asks it when choosing what selective recomputation and the integer program may touch.
"""
RECOMPUTABLE_FAMILIES = ("elementwise", "binary", "reduce", "random", "matmul", "movement", "normalization")


def refusal(entry, tensors, saved_on_storage, require_saved=True):
    """None when `entry`'s output can be recomputed, else the reason, as a sentence for the user.

    `tensors` maps id -> tensor record; `saved_on_storage` maps storage id -> ids of the saved tensors on it.
    With `require_saved`, an output nobody saves is refused (nothing to trade); a recipe chain's inner links
    pass require_saved=False.
    """
    if entry["output"] is None:
        return "this entry has no output tensor"
    out = tensors[entry["output"]]
    if entry["family"] not in RECOMPUTABLE_FAMILIES:
        return f"{entry['op']} ({entry['family']}) is a fused op: its output cannot be re-derived on its own"
    if out.get("view"):
        return f"{entry['op']} makes a view: it holds no memory of its own — pick the op output it came from"
    if out["kind"] != "activation":
        return f"{out['name']} is {'an input' if out['kind'] == 'input' else 'a ' + out['kind']}, not an activation"
    if require_saved and not (out["saved_by"] or out.get("recomputed_by")):
        return "nothing saves this output for backward: there is nothing to trade"
    if any(uid != out["id"] for uid in saved_on_storage.get(out["storage"], ())):
        return "a view of this output is saved too: its memory stays either way"
    return None


def saved_by_storage(tensors):
    """storage id -> ids of the tensors on it that some entry saves."""
    found = {}
    for t in tensors:
        if t["saved_by"]:
            found.setdefault(t["storage"], []).append(t["id"])
    return found


def mark(tape, tensors):
    """Give every forward entry {"recompute": {"ok", "reason"}} for its output."""
    by_id = {t["id"]: t for t in tensors}
    saved = saved_by_storage(tensors)
    for entry in tape:
        if entry["phase"] == "forward":
            reason = refusal(entry, by_id, saved)
            entry["recompute"] = {"ok": reason is None, "reason": reason or ""}
