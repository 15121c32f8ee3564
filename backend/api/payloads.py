"""Shapes and size caps for what clients send: a snapshot request and a session's workspace document.

Each check collects {"path", "message"} problems in backend.problems (as the spec validator does) so one
400 lists everything wrong at once. The spec itself is only checked for being an object of bounded size here;
its meaning is the model validator's job.
"""
import math
from dataclasses import dataclass

from backend.api.errors import ApiError
from backend.problems import Problems, join, unknown_field
from backend.store import jsontext

SPEC_MAX_BYTES = 256 * 1024
CHECKPOINT_MAX_BYTES = 64 * 1024
SESSION_MAX_BYTES = 256 * 1024
HISTORY_MAX_ENTRIES = 50
ORIGIN_MAX_BYTES = 4 * 1024
BASELINE_MAX_BYTES = 64 * 1024
HISTORY_ENTRY_MAX_BYTES = 64 * 1024
STEP_MAX = 1_000_000
SELECTED_MAX_CHARS = 200
TITLE_MAX_CHARS = 120
ZOOM_MAX_KEYS = 8
UNFOLDED_MAX_GROUPS = 500

VIEW_KEYS = ("step", "selected", "zoom", "unfolded")


@dataclass(frozen=True)
class SnapshotRequest:
    spec: dict
    checkpoint: dict | None
    view: dict
    title: str | None


def _raise_if_any(problems: Problems, sentence: str) -> None:
    if problems:
        raise ApiError(400, sentence, problems)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


def _size_bytes(value) -> int:
    return len(jsontext.dump(value))


def _unknown_keys(obj: dict, allowed, path: str, problems: Problems) -> None:
    for key in obj:
        if key not in allowed:
            unknown_field(problems, join(path, str(key)), allowed)


def _object_or_null(value, path: str, max_bytes: int, problems: Problems, required: bool = False) -> None:
    if value is None and not required:
        return
    if not isinstance(value, dict):
        problems.add(path, "Must be a JSON object." if required else "Must be a JSON object or null.")
    elif (size := _size_bytes(value)) > max_bytes:
        problems.add(path, f"Is {size} bytes as JSON; the limit is {max_bytes}.")


def _zoom(value, path: str, problems: Problems) -> None:
    if value is None or _is_number(value):
        return
    if not isinstance(value, dict) or len(value) > ZOOM_MAX_KEYS:
        problems.add(path, f"Must be a number, null, or an object of at most {ZOOM_MAX_KEYS} numbers (e.g. k, x, y).")
        return
    for key, number in value.items():
        if len(key) > 32 or not _is_number(number):
            problems.add(f"{path}.{key[:32]}", "Must be a finite number under a key of at most 32 characters.")


def _unfolded(value, path: str, problems: Problems) -> None:
    """The graph's open groups: null (the page's opening level), "all", or a list of group ids."""
    if value is None or value == "all":
        return
    if not isinstance(value, list) or len(value) > UNFOLDED_MAX_GROUPS:
        problems.add(path, f'Must be null, "all", or a list of at most {UNFOLDED_MAX_GROUPS} group ids.')
        return
    if not all(isinstance(item, str) and 0 < len(item) <= SELECTED_MAX_CHARS for item in value):
        problems.add(path, f"Each group id must be a string of 1 to {SELECTED_MAX_CHARS} characters.")


def parse_view(value, path: str, problems: Problems) -> dict | None:
    """{step, selected?, zoom?, unfolded?} with defaults filled in; None (and problems) when malformed."""
    if not isinstance(value, dict):
        problems.add(path, "Must be an object like {\"step\": 14, \"selected\": \"n3\"}.")
        return None
    _unknown_keys(value, VIEW_KEYS, path, problems)
    step = value.get("step")
    if not _is_int(step) or not 0 <= step <= STEP_MAX:
        problems.add(f"{path}.step", f"Must be a whole number from 0 to {STEP_MAX}.")
    selected = value.get("selected")
    if selected is not None and (not isinstance(selected, str) or not 0 < len(selected) <= SELECTED_MAX_CHARS):
        problems.add(f"{path}.selected", f"Must be a node id of 1 to {SELECTED_MAX_CHARS} characters, or null.")
    _zoom(value.get("zoom"), f"{path}.zoom", problems)
    _unfolded(value.get("unfolded"), f"{path}.unfolded", problems)
    view = {"step": step, "selected": selected, "zoom": value.get("zoom")}
    if "unfolded" in value:                       # the graph's folds, only when the page saved them
        view["unfolded"] = value["unfolded"]
    return view


def _is_unicode_text(value: str) -> bool:
    """False for a string holding a lone surrogate ("\ud800"): JSON can carry one, no database column can."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _title(value, problems: Problems) -> str | None:
    """Checked before anything runs: the title is the one field stored as plain text, not as JSON."""
    if value is None:
        return None
    if (not isinstance(value, str) or len(value) > TITLE_MAX_CHARS
            or any(ord(ch) < 32 or ord(ch) == 127 for ch in value)):
        problems.add("title", f"Must be a single line of at most {TITLE_MAX_CHARS} characters, or null.")
        return None
    if not _is_unicode_text(value):
        problems.add("title", "Holds a lone surrogate (half of a UTF-16 pair); send Unicode text.")
        return None
    return value.strip() or None


def parse_snapshot_request(body) -> SnapshotRequest:
    problems = Problems()
    if not isinstance(body, dict):
        raise ApiError(400, "The body must be an object like {\"spec\": {...}, \"view\": {\"step\": 0}}.")
    _unknown_keys(body, ("spec", "checkpoint", "view", "title"), "", problems)
    _object_or_null(body.get("spec"), "spec", SPEC_MAX_BYTES, problems, required=True)
    _object_or_null(body.get("checkpoint"), "checkpoint", CHECKPOINT_MAX_BYTES, problems)
    view = parse_view(body.get("view"), "view", problems)
    title = _title(body.get("title"), problems)
    _raise_if_any(problems, "The snapshot request has problems; nothing was saved.")
    return SnapshotRequest(spec=body["spec"], checkpoint=body.get("checkpoint"), view=view, title=title)


def _history(value, problems: Problems) -> dict:
    if value is None:
        return {"undo": [], "redo": []}
    if not isinstance(value, dict):
        problems.add("history", "Must be an object {\"undo\": [...], \"redo\": [...]}.")
        return {}
    _unknown_keys(value, ("undo", "redo"), "history", problems)
    stacks = {}
    for name in ("undo", "redo"):
        entries = value.get(name, [])
        if not isinstance(entries, list) or len(entries) > HISTORY_MAX_ENTRIES:
            problems.add(f"history.{name}", f"Must be a list of at most {HISTORY_MAX_ENTRIES} objects.")
            continue
        for index, entry in enumerate(entries):
            _object_or_null(entry, f"history.{name}[{index}]", HISTORY_ENTRY_MAX_BYTES, problems, required=True)
        stacks[name] = entries
    return stacks


def parse_session_document(body) -> dict:
    """A whole workspace {spec, checkpoint, view, history}; absent fields take their empty values."""
    problems = Problems()
    if not isinstance(body, dict):
        raise ApiError(400, "The body must be an object like {\"spec\": {...}, \"view\": {\"step\": 0}, \"history\": {...}}.")
    _unknown_keys(body, ("spec", "checkpoint", "view", "history", "origin", "baseline", "version"), "", problems)
    _object_or_null(body.get("spec"), "spec", SPEC_MAX_BYTES, problems)
    _object_or_null(body.get("checkpoint"), "checkpoint", CHECKPOINT_MAX_BYTES, problems)
    _object_or_null(body.get("origin"), "origin", ORIGIN_MAX_BYTES, problems)
    _object_or_null(body.get("baseline"), "baseline", BASELINE_MAX_BYTES, problems)
    view = parse_view(body.get("view", {"step": 0}), "view", problems)
    history = _history(body.get("history"), problems)
    version = body.get("version")
    if version is not None and (not isinstance(version, str) or len(version) > 64):
        problems.add("version", "Must be the version string a GET or PUT answered with, or null for a new workspace.")
    _raise_if_any(problems, "The session document has problems; nothing was saved.")
    document = {"spec": body.get("spec"), "checkpoint": body.get("checkpoint"), "view": view, "history": history,
                "origin": body.get("origin"), "baseline": body.get("baseline")}
    if (size := _size_bytes(document)) > SESSION_MAX_BYTES:
        raise ApiError(413, f"The workspace is {size} bytes as JSON, over the {SESSION_MAX_BYTES // 1024} KiB cap"
                            " (SESSION_MAX_BYTES); trim the undo history.",
                       cap="SESSION_MAX_BYTES", limit=SESSION_MAX_BYTES, requested=size)
    return document


def push_undo(history: dict, entry: dict) -> dict:
    """The history with `entry` pushed on undo and redo cleared, dropping the oldest entries past the cap."""
    undo = (list(history.get("undo", [])) + [entry])[-HISTORY_MAX_ENTRIES:]
    return {"undo": undo, "redo": []}


def fit_session(document: dict) -> dict:
    """Drop the oldest undo entries until the document fits SESSION_MAX_BYTES (used when the server writes)."""
    while _size_bytes(document) > SESSION_MAX_BYTES and document["history"]["undo"]:
        document = {**document, "history": {**document["history"], "undo": document["history"]["undo"][1:]}}
    return document
