"""Trace API: GET /api/presets and POST /api/trace (a spec in, the trace document out)."""
from flask import Blueprint, jsonify, request

from backend.models import CapError, SpecError, presets
from backend.planner import PolicyError
from backend.trace import trace_spec

trace_api = Blueprint("trace_api", __name__)


@trace_api.get("/api/presets")
def list_presets():
    return jsonify(presets.listing())


def problem_response(message, problems, status):
    return jsonify({"error": message, "problems": problems}), status


def read_json_object():
    """The request body as a JSON object, or a (response, status) pair explaining what is wrong."""
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        return None, problem_response("the body must be a JSON object",
                                      [{"path": "body", "message": 'send JSON like {"spec": {...}}'}], 400)
    return body, None


@trace_api.post("/api/trace")
def trace():
    body, error = read_json_object()
    if error:
        return error
    if "spec" not in body:
        return problem_response("no spec", [{"path": "spec", "message": "is required: the model to trace"}], 400)
    checkpoint = body.get("checkpoint")
    try:
        document = trace_spec(body["spec"], checkpoint=checkpoint)
    except CapError as cap:
        return jsonify({"error": cap.message, "cap": cap.cap, "limit": cap.limit, "requested": cap.requested,
                        "problems": cap.problems}), 413
    except PolicyError as bad:                       # a SpecError too: caught first for its own sentence
        return problem_response("the checkpoint request has problems", bad.problems, 400)
    except SpecError as bad:
        return problem_response("the spec has problems", bad.problems, 400)
    return jsonify(document)
