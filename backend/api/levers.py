"""Levers API: POST /api/levers {spec, checkpoint?} → the executed changes that would lower this run's peak."""
from flask import Blueprint, jsonify

from backend.api.bodies import json_body
from backend.api.errors import ApiError
from backend.models import validate_spec
from backend.planner.levers import levers
from backend.trace.run import _ENGINE_LOCK

levers_api = Blueprint("levers_api", __name__)


@levers_api.post("/api/levers")
def lever_report():
    """Every lever traced by the engine, ranked; a bad spec or checkpoint is a 4xx exactly as for /api/trace."""
    body = json_body()
    if not isinstance(body, dict) or "spec" not in body:
        raise ApiError(400, 'The body must be a JSON object like {"spec": {...}, "checkpoint": {...}}.',
                       [{"path": "spec", "message": "is required: the model whose peak to lower"}])
    spec = validate_spec(body["spec"])
    with _ENGINE_LOCK:
        return jsonify(levers(spec, body.get("checkpoint")))
