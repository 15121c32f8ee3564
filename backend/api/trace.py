"""Trace API: GET /api/presets and POST /api/trace (a spec in, the trace document out)."""
from flask import Blueprint, current_app, jsonify

from backend.api.bodies import json_object_body
from backend.api.errors import ApiError
from backend.models import presets
from backend.driver import trace_spec
from backend.trace.document_versions import pack

trace_api = Blueprint("trace_api", __name__)


def engine_limits():
    """How long a request may wait for the engine and run on it: the driver's defaults (1 s, 8 s) unless the app's
    config sets ENGINE_WAIT_S / ENGINE_DEADLINE_S (the browser tests' one shared server queues its pages instead)."""
    return {"wait_s": current_app.config.get("ENGINE_WAIT_S"), "deadline_s": current_app.config.get("ENGINE_DEADLINE_S")}


@trace_api.get("/api/presets")
def list_presets():
    return jsonify(presets.listing())


@trace_api.post("/api/trace")
def trace():
    """The trace document (schema_version 2) of a spec and a checkpoint request; bad input becomes 4xx in
    api/errors.py."""
    body = json_object_body('{"spec": {...}}')
    if "spec" not in body:
        raise ApiError(400, "No spec to trace.", [{"path": "spec", "message": "is required: the model to trace"}])
    return jsonify(pack(trace_spec(body["spec"], checkpoint=body.get("checkpoint"), **engine_limits())))
