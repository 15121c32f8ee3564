"""The sessions API: GET and PUT /api/session, the calling browser's own workspace (no id in the URL).

GET only reads: without a workspace it answers the empty one and writes nothing, not even a cookie.
"""
from flask import Blueprint, jsonify

from backend.api.bodies import json_body
from backend.api.payloads import parse_session_document
from backend.api.workspace_cookie import current_workspace, save_workspace, workspace_response_body

sessions = Blueprint("sessions", __name__)


def _private(response):
    response.headers["Cache-Control"] = "no-store"
    return response


@sessions.get("/api/session")
def read_session():
    return _private(jsonify(workspace_response_body(current_workspace())))


@sessions.put("/api/session")
def replace_session():
    document = parse_session_document(json_body())
    return _private(jsonify(workspace_response_body(save_workspace(document))))
