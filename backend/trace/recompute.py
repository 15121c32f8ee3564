"""Which forward outputs may be recomputed in backward instead of saved, and why not when they may not.

One rule for everyone: the document marks each forward entry with it (the browser's manual picks read the
mark), and the planner asks it when choosing what selective recomputation and the integer program may touch.
"""
from typing import NamedTuple

RECOMPUTABLE_FAMILIES = ("elementwise", "binary", "reduce", "random", "matmul", "movement", "normalization")


class TapeUse(NamedTuple):
    """What the rest of the tape says about recomputing an op's output."""
    saved: dict                 # storage id -> ids of the tensors on it that some entry saves
    written: dict               # storage id -> the first step an in-place op wrote into it
    swept: frozenset | None     # the entries whose node ran in backward; None when not known (all count as reached)


def tape_use(tensors, swept=None):
    """TapeUse of a run's tensor records; `swept`: the entries backward ran (the sweep's), when known."""
    saved, written = {}, {}
    for t in tensors:
        if t["saved_by"]:
            saved.setdefault(t["storage"], []).append(t["id"])
        for write in t.get("versions", ()):
            written[t["storage"]] = min(written.get(t["storage"], write["step"]), write["step"])
    return TapeUse(saved, written, None if swept is None else frozenset(swept))


def refusal(entry, tensors, use, require_saved=True):
    """None when `entry`'s output can be recomputed, else the reason, as a sentence for the user.

    `tensors` maps id -> tensor record; `use` is tape_use(tensors, swept). With `require_saved`, an output nobody
    saves is refused (nothing to trade); a recipe chain's inner links pass require_saved=False.
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
    if any(uid != out["id"] for uid in use.saved.get(out["storage"], ())):
        return "a view of this output is saved too: its memory stays either way"
    unswept = [saver for saver in out["saved_by"] if use.swept is not None and saver not in use.swept]
    if unswept:
        return (f"no gradient reaches entry {unswept[0]}, which saves it (a detach or no_grad cuts it off): backward "
                "never reads it, and it goes when its graph does")
    written = use.written.get(out["storage"])
    if written is not None:
        return (f"an in-place op writes into it at step {written}: re-running {entry['op']} would give the value from "
                "before that write, not the one backward reads")
    return None


def mark(tape, tensors, sweep=None):
    """Give every forward entry {"recompute": {"ok", "reason"}} for its output; `sweep`: the backward sweep's items,
    when backward ran to its end."""
    by_id = {t["id"]: t for t in tensors}
    use = tape_use(tensors, None if sweep is None else {item["entry"] for item in sweep})
    for entry in tape:
        if entry["phase"] == "forward":
            reason = refusal(entry, by_id, use)
            entry["recompute"] = {"ok": reason is None, "reason": reason or ""}
