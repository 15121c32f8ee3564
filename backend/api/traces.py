"""POST /api/traces: a trace document recorded elsewhere (a real PyTorch step) stored as a snapshot, answering /s/<id>;
or a run of many ranks ({"world_size": N, "ranks": [document, ...]}, what --nproc writes), stored as it came.

The document is read like every other write (this origin's JSON, capped in bytes and in rate), then checked by
backend.trace.intake before anything is stored: the server never runs what it was sent and never trusts a
figure it can recompute. The snapshot opens read-only; a posted document cannot be re-traced.
"""
from flask import Blueprint, current_app, request

from backend.api.bodies import json_body
from backend.api.errors import ApiError
from backend.api.snapshots import store_snapshot
from backend.models.caps import cap
from backend.trace import deadline
from backend.trace.document_versions import upgrade
from backend.trace.intake import (PostedDocumentError, PostedDocumentTooLarge, is_many_ranks, load_posted_document,
                                  load_posted_ranks)

traces_api = Blueprint("traces_api", __name__)

UPLOAD_MAX_BYTES_DEFAULT = 4 * 1024 * 1024     # the posted JSON (the small GPT's is 0.8 MB); checked in ~1.5 s
UPLOAD_DEADLINE_S_DEFAULT = 8.0                # past it the check stops and the answer is a 503, as the engine's
OPENING_VIEW = {"step": 0, "selected": None, "zoom": None}


@traces_api.post("/api/traces")
def post_trace():
    request.max_content_length = current_app.config.get("TRACE_UPLOAD_MAX_BYTES", UPLOAD_MAX_BYTES_DEFAULT)
    try:
        posted = json_body()
        with deadline.running(current_app.config.get("TRACE_UPLOAD_DEADLINE_S", UPLOAD_DEADLINE_S_DEFAULT)):
            if is_many_ranks(posted):      # {"world_size": N, "ranks": [...]}: every rank's document checked
                documents = load_posted_ranks(posted)
            else:
                documents = [load_posted_document(posted)]
    except PostedDocumentTooLarge as error:
        raise ApiError(413, f"{error} Record a smaller step.", [{"path": error.cap, "message": str(error)}],
                       cap=error.cap, limit=error.limit, requested=error.size)
    except PostedDocumentError as error:
        raise ApiError(400, str(error), error.problems)
    stored = ({"world_size": posted["world_size"], "ranks": [upgrade(rank) for rank in posted["ranks"]]}
              if is_many_ranks(posted) else upgrade(posted))
    document = documents[0]         # rank 0 names a run of many
    return store_snapshot(spec=document.get("spec") or {}, checkpoint=None, view=OPENING_VIEW, trace=stored,
                          title=_title(document), smaller="Record a smaller step.")


def _title(document):
    """"GPT (torch 2.13.0)" for an imported run, else the spec's name: one printable line, as shared titles are."""
    source = document.get("source") or {}
    name = source.get("model") or (document.get("spec") or {}).get("name")
    if not isinstance(name, str):
        return None
    version = source.get("torch_version")
    title = (f"{name} (torch {version})" if version else name)[:cap("title_length")].strip()
    return title if title.isprintable() and title.isascii() and title else None
