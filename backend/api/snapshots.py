"""The snapshots API: share a state by link (POST), read it back (GET), fork it into your workspace (copy).

There is deliberately no listing: an id is only known to those given the link. Also serves GET /s/<id>,
the explorer opened read-only on a snapshot.
"""
import json

from flask import Blueprint, Response, current_app, jsonify, render_template

from backend.api.bodies import json_body
from backend.api.errors import ApiError
from backend.api.payloads import fit_session, parse_snapshot_request, push_undo
from backend.api.workspace_cookie import current_workspace, save_workspace, workspace_response_body
from backend.store import current_db, jsontext, storage_budget
from backend.store import snapshots as stored_snapshots
from backend.store.ids import is_snapshot_id
from backend.api.trace import traced
from backend.trace.document_versions import step_count

snapshots = Blueprint("snapshots", __name__)

TRACE_MAX_BYTES_DEFAULT = 32 * 1024 * 1024     # the document's JSON: what a read of the link sends back
STORED_MAX_BYTES_DEFAULT = 2 * 1024 * 1024     # the row on disk, trace compressed (the worst accepted: 1.2 MiB)
NOT_FOUND = "No snapshot has this id. Links are exact: check the whole link was copied."


def _trace_spec():
    """The tracer; a seam, so the storage-contract tests can swap in a stand-in."""
    return _packed_trace


def _packed_trace(spec: dict, checkpoint: dict | None) -> dict:
    """The run's document as a link stores and serves it: schema_version 2 (snapshots stored before it hold 1,
    which the page reads as it is), the one POST /api/trace sent for the same request when the app still keeps it
    (a share right after looking)."""
    return json.loads(traced(spec, checkpoint)[0].body)


def _trace(spec: dict, checkpoint: dict | None) -> dict:
    """Spec and checkpoint problems become 400/413 in api/errors.py, as for /api/trace."""
    return _trace_spec()(spec, checkpoint)


def _check_step_in_trace(view: dict, trace: dict) -> None:
    steps = step_count(trace)
    if steps is not None and view["step"] >= steps:
        raise ApiError(400, "The view's step is past the end of this trace.",
                       [{"path": "view.step", "message": f"This trace has steps 0 to {steps - 1}."}])


def _snapshot_or_404(snapshot_id: str):
    record = stored_snapshots.get(current_db(), snapshot_id) if is_snapshot_id(snapshot_id) else None
    if record is None:
        raise ApiError(404, NOT_FOUND)
    return record


@snapshots.post("/api/snapshots")
def create_snapshot():
    wanted = parse_snapshot_request(json_body())
    trace = _trace(wanted.spec, wanted.checkpoint)
    _check_step_in_trace(wanted.view, trace)
    return store_snapshot(spec=wanted.spec, checkpoint=wanted.checkpoint, view=wanted.view, trace=trace,
                          title=wanted.title, smaller="Share a smaller model.")


def store_snapshot(*, spec, checkpoint, view, trace, title, smaller):
    """Store a snapshot under the app's caps and answer 201 {id, url} with its Location; over a cap, 413 whose
    sentence ends with `smaller` (what to do about it)."""
    config = current_app.config
    try:
        snapshot_id = stored_snapshots.create(
            current_db(), spec=spec, checkpoint=checkpoint, view=view, trace=trace, title=title,
            max_trace_bytes=config.get("SNAPSHOT_MAX_TRACE_BYTES", TRACE_MAX_BYTES_DEFAULT),
            max_stored_bytes=config.get("SNAPSHOT_MAX_STORED_BYTES", STORED_MAX_BYTES_DEFAULT),
            budget=storage_budget())
    except stored_snapshots.StoredValueTooLarge as error:
        raise ApiError(413, f"{error} {smaller}", cap=error.cap, limit=error.limit_bytes, requested=error.size_bytes)
    url = f"/s/{snapshot_id}"
    response = jsonify({"id": snapshot_id, "url": url})
    response.headers["Location"] = url
    return response, 201


@snapshots.get("/api/snapshots/<snapshot_id>", merge_slashes=False)  # "..//" is a 404, not a redirect
def read_snapshot(snapshot_id: str):
    record = _snapshot_or_404(snapshot_id)
    head = {
        "id": record.id, "title": record.title, "spec": record.spec, "checkpoint": record.checkpoint,
        "view": record.view, "schema_version": record.schema_version,
        "engine_version": record.engine_version, "created_at": record.created_at.isoformat(),
    }
    # The trace is stored as JSON text we wrote; splice it in rather than parse and re-encode it.
    body = jsontext.dump(head)[:-1] + ',"trace":' + record.trace_json + "}"
    response = Response(body, mimetype="application/json")
    response.headers["Cache-Control"] = "private, max-age=31536000, immutable"  # snapshots never change
    return response


@snapshots.post("/api/snapshots/<snapshot_id>/copy", merge_slashes=False)
def copy_snapshot(snapshot_id: str):
    """"Make a copy": the snapshot's spec, checkpoint and view become the caller's workspace.

    What the workspace held before is pushed on its undo stack, so a copy never destroys work. The body must
    be a JSON object (`{}`): a plain HTML form, which cannot send one, can never replace a workspace.
    """
    record = _snapshot_or_404(snapshot_id)
    if not isinstance(json_body(), dict):
        raise ApiError(400, "The body must be a JSON object: send {}.")
    workspace = current_workspace()
    history = {"undo": [], "redo": []} if workspace is None else workspace.history
    if workspace is not None and workspace.spec is not None:
        history = push_undo(history, {"spec": workspace.spec, "checkpoint": workspace.checkpoint,
                                      "origin": workspace.origin, "label": "Before copying a shared snapshot"})
    title = record.title or (record.spec.get("name") if isinstance(record.spec.get("name"), str) else None)
    document = fit_session({"spec": record.spec, "checkpoint": record.checkpoint,
                            "view": {"zoom": None, **record.view}, "history": history,
                            "origin": {"kind": "copy", "title": title or "a shared snapshot"}, "baseline": None})
    response = jsonify(workspace_response_body(save_workspace(document, workspace=workspace, replace=True)))
    response.headers["Cache-Control"] = "no-store"
    return response


@snapshots.get("/s/<path:snapshot_id>", merge_slashes=False)  # path: every /s/... address gets this page's 404
def snapshot_page(snapshot_id: str):
    """The explorer, read-only, on a snapshot; the page fetches /api/snapshots/<id> itself."""
    if not is_snapshot_id(snapshot_id) or not stored_snapshots.exists(current_db(), snapshot_id):
        return render_template("snapshot_not_found.html"), 404
    return render_template("explorer.html", snapshot_id=snapshot_id, read_only=True)
