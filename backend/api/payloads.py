"""Shapes and size caps (backend/models/caps.py) for what clients send: a snapshot request and a session's workspace document.

Each check collects {"path", "message"} problems in backend.problems (as the spec validator does) so one
400 lists everything wrong at once. The spec itself is only checked for being an object of bounded size here;
its meaning is the model validator's job.
"""
from dataclasses import dataclass

from backend.api.errors import ApiError
from backend.models import fields
from backend.models.caps import cap
from backend.problems import Problems
from backend.store import jsontext

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


def _size_bytes(value) -> int:
    return len(jsontext.dump(value))


def _object_or_null(value, path: str, max_bytes: int, problems: Problems, required: bool = False) -> None:
    if value is None and not required:
        return
    expected = f"an object of at most {max_bytes:,} bytes as JSON" + ("" if required else ", or null")
    if not isinstance(value, dict):
        fields.report(problems, path, expected, value, of_type=False)
    elif (size := _size_bytes(value)) > max_bytes:
        fields.report(problems, path, expected, value, got=f"{size:,} bytes")


def _zoom(value, path: str, problems: Problems) -> None:
    if value is None or fields.is_number(value):
        return
    most = cap("zoom_keys")
    expected = f"a number, null, or an object of at most {most} numbers (e.g. k, x, y)"
    if not isinstance(value, dict) or len(value) > most:
        fields.report(problems, path, expected, value, of_type=isinstance(value, dict),
                      got=f"{len(value)} keys" if isinstance(value, dict) else None)
        return
    for key, number in value.items():
        if len(key) > (longest := cap("zoom_key_length")):
            fields.report(problems, f"{path}.{key[:longest]}", f"a key of at most {longest} characters", key,
                          got=f"{len(key):,} characters")
        elif not fields.is_number(number):
            fields.report(problems, f"{path}.{key}", "a finite number", number, of_type=False)


def _unfolded(value, path: str, problems: Problems) -> None:
    """The graph's open groups: null (the page's opening level), "all", or a list of group ids."""
    if value is None or value == "all":
        return
    most = cap("unfolded_groups")
    expected = f'null, "all", or a list of at most {most} group ids'
    if not isinstance(value, list) or len(value) > most:
        fields.report(problems, path, expected, value, of_type=isinstance(value, list))
        return
    for index, item in enumerate(value):
        fields.text(item, f"{path}[{index}]", problems, cap("id_length"), min_length=1, what="a group id")


def parse_view(value, path: str, problems: Problems) -> dict | None:
    """{step, selected?, zoom?, unfolded?} with defaults filled in; None (and problems) when malformed."""
    if not isinstance(value, dict):
        fields.report(problems, path, 'an object like {"step": 14, "selected": "n3"}', value, of_type=False)
        return None
    fields.unknown_keys(value, VIEW_KEYS, path, problems)
    step = value.get("step")
    fields.integer(step, f"{path}.step", problems, 0, cap("view_step"))
    selected = value.get("selected")
    if selected is not None:
        fields.text(selected, f"{path}.selected", problems, cap("id_length"), min_length=1, what="a node id")
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
    if value is None or fields.text(value, "title", problems, cap("title_length"), fallback=None) is None:
        return None
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        problems.add("title", "must be a single line: it holds a line break or another control character")
        return None
    if not _is_unicode_text(value):
        problems.add("title", "holds a lone surrogate (half of a UTF-16 pair); send Unicode text")
        return None
    return value.strip() or None


def parse_snapshot_request(body) -> SnapshotRequest:
    problems = Problems()
    if not isinstance(body, dict):
        raise ApiError(400, "The body must be an object like {\"spec\": {...}, \"view\": {\"step\": 0}}.")
    fields.unknown_keys(body, ("spec", "checkpoint", "view", "title"), "", problems)
    _object_or_null(body.get("spec"), "spec", cap("spec_bytes"), problems, required=True)
    _object_or_null(body.get("checkpoint"), "checkpoint", cap("checkpoint_bytes"), problems)
    view = parse_view(body.get("view"), "view", problems)
    title = _title(body.get("title"), problems)
    _raise_if_any(problems, "The snapshot request has problems; nothing was saved.")
    return SnapshotRequest(spec=body["spec"], checkpoint=body.get("checkpoint"), view=view, title=title)


def _history(value, problems: Problems) -> dict:
    if value is None:
        return {"undo": [], "redo": []}
    if not isinstance(value, dict):
        fields.report(problems, "history", 'an object {"undo": [...], "redo": [...]}', value, of_type=False)
        return {}
    fields.unknown_keys(value, ("undo", "redo"), "history", problems)
    stacks, most = {}, cap("history_entries")
    for name in ("undo", "redo"):
        entries = value.get(name, [])
        if not isinstance(entries, list) or len(entries) > most:
            fields.report(problems, f"history.{name}", f"a list of at most {most} objects", entries,
                          of_type=isinstance(entries, list))
            continue
        for index, entry in enumerate(entries):
            _object_or_null(entry, f"history.{name}[{index}]", cap("history_entry_bytes"), problems, required=True)
        stacks[name] = entries
    return stacks


def parse_session_document(body) -> dict:
    """A whole workspace {spec, checkpoint, view, history}; absent fields take their empty values."""
    problems = Problems()
    if not isinstance(body, dict):
        raise ApiError(400, "The body must be an object like {\"spec\": {...}, \"view\": {\"step\": 0}, \"history\": {...}}.")
    fields.unknown_keys(body, ("spec", "checkpoint", "view", "history", "origin", "baseline", "version"), "", problems)
    _object_or_null(body.get("spec"), "spec", cap("spec_bytes"), problems)
    _object_or_null(body.get("checkpoint"), "checkpoint", cap("checkpoint_bytes"), problems)
    _object_or_null(body.get("origin"), "origin", cap("origin_bytes"), problems)
    _object_or_null(body.get("baseline"), "baseline", cap("baseline_bytes"), problems)
    view = parse_view(body.get("view", {"step": 0}), "view", problems)
    history = _history(body.get("history"), problems)
    version = body.get("version")
    if version is not None and (not isinstance(version, str) or len(version) > cap("version_length")):
        fields.report(problems, "version", "the version string a GET or PUT answered with, or null for a new "
                      "workspace", version, of_type=isinstance(version, str), got="a longer string")
    _raise_if_any(problems, "The session document has problems; nothing was saved.")
    document = {"spec": body.get("spec"), "checkpoint": body.get("checkpoint"), "view": view, "history": history,
                "origin": body.get("origin"), "baseline": body.get("baseline")}
    if (size := _size_bytes(document)) > (limit := cap("session_bytes")):
        raise ApiError(413, f"The workspace is {size} bytes as JSON, over the {limit // 1024} KiB cap"
                            " (session_bytes); trim the undo history.",
                       cap="session_bytes", limit=limit, requested=size)
    return document


def push_undo(history: dict, entry: dict) -> dict:
    """The history with `entry` pushed on undo and redo cleared, dropping the oldest entries past the cap."""
    undo = (list(history.get("undo", [])) + [entry])[-cap("history_entries"):]
    return {"undo": undo, "redo": []}


def fit_session(document: dict) -> dict:
    """Drop the oldest undo entries until the document fits cap("session_bytes") (used when the server writes)."""
    while _size_bytes(document) > cap("session_bytes") and document["history"]["undo"]:
        document = {**document, "history": {**document["history"], "undo": document["history"]["undo"][1:]}}
    return document
