"""Levers API: POST /api/levers {spec, checkpoint?} → the executed changes that would lower this run's peak.

It runs under a trace's guards (backend/driver): the work cap (priced as one planned trace per lever), the engine
slot (503 when busy) and the deadline."""
from flask import Blueprint, jsonify

from backend.api.bodies import json_body
from backend.api.errors import ApiError
from backend.api.trace import engine_limits
from backend.driver import run_on_engine
from backend.planner.levers import MAX_OPTIMAL_LEVERS, MAX_SPEC_LEVERS, levers

levers_api = Blueprint("levers_api", __name__)


@levers_api.post("/api/levers")
def lever_report():
    """Every lever traced by the engine, ranked; a bad spec or checkpoint is a 4xx exactly as for /api/trace."""
    body = json_body()
    if not isinstance(body, dict) or "spec" not in body:
        raise ApiError(400, 'The body must be a JSON object like {"spec": {...}, "checkpoint": {...}}.',
                       [{"path": "spec", "message": "is required: the model whose peak to lower"}])
    checkpoint = body.get("checkpoint")
    # Priced as the planner's schedules (a planned trace) plus every spec lever traced under the checkpoint and
    # every optimal schedule run from the frontier.
    report = run_on_engine(body["spec"], checkpoint or {"policy": "sqrt"},
                           lambda spec, limits: levers(spec, checkpoint, limits),
                           runs=1 + MAX_SPEC_LEVERS + MAX_OPTIMAL_LEVERS, **engine_limits())
    return jsonify(report)
