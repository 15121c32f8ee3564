"""Schema API: GET /api/schema, the spec's fields (top level, input, loss, optimizer, each layer kind) with their
ranges, defaults, options and help, and the caps; the editor builds its controls from it."""
from flask import Blueprint, jsonify

from backend.models.schema import spec_schema

schema_api = Blueprint("schema_api", __name__)


@schema_api.get("/api/schema")
def schema():
    return jsonify(spec_schema())
