"""The sessions API: GET and PUT /api/session, the calling browser's own workspace (no id in the URL).

GET never writes: a browser without a workspace gets the empty document and no row. The first PUT creates it.
A PUT naming the `version` it started from is refused with 409 and the current document when another tab
saved in between, so a stale tab never overwrites silently.
"""
from flask import Blueprint, jsonify

from backend.api.bodies import json_body
from backend.api.payloads import parse_session_document
from backend.api.workspace_cookie import (current_workspace, save_workspace,
                                          workspace_response_body)
from backend.store.sessions import StaleVersion

sessions = Blueprint("sessions", __name__)


def _private(response):
    response.headers["Cache-Control"] = "no-store"
    return response


@sessions.get("/api/session")
def read_session():
    return _private(jsonify(workspace_response_body(current_workspace())))


@sessions.put("/api/session")
def replace_session():
    body = json_body()
    document = parse_session_document(body)
    try:
        saved = save_workspace(document, body.get("version"))
    except StaleVersion as stale:
        answer = {"error": "This workspace changed in another tab since you loaded it; reload it or keep yours.",
                  "current": workspace_response_body(stale.current)}
        return _private(jsonify(answer)), 409
    return _private(jsonify(workspace_response_body(saved)))
