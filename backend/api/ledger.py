"""The ledger's web face: GET /api/ledger (query fields → the ledger as JSON) and the /ledger page."""
from flask import Blueprint, jsonify, render_template, request

from backend.api.errors import ApiError
from backend.ledger import (FIELDS, MODEL_PRESETS, PRESET_COMMON, LedgerConfig, LedgerConfigError, build_ledger,
                            parse_config)

ledger = Blueprint("ledger", __name__)


def _invalid(problems):
    sentence = "; ".join(f"{p['path']} {p['message']}" for p in problems)
    return ApiError(400, f"The ledger config is invalid: {sentence}.", problems)


def _query_values():
    """Query fields as strings; a field given twice is a problem, not a silent pick."""
    repeated = [{"path": name, "message": "is given more than once; pass each field once"}
                for name in request.args if len(request.args.getlist(name)) > 1]
    if repeated:
        raise _invalid(repeated)
    return dict(request.args.items())


@ledger.get("/api/ledger")
def ledger_json():
    try:
        config = parse_config(_query_values())
    except LedgerConfigError as error:
        raise _invalid(error.problems) from None
    return jsonify(build_ledger(config))


@ledger.get("/ledger")
def ledger_page():
    fields = {name: {"spec": spec, "default": getattr(LedgerConfig, name)} for name, spec in FIELDS.items()}
    presets = {name: {**PRESET_COMMON, **{k: v for k, v in shape.items() if k != "title"}}
               for name, shape in MODEL_PRESETS.items()}
    titles = {name: shape["title"] for name, shape in MODEL_PRESETS.items()}
    return render_template("ledger.html", fields=fields, presets=presets, preset_titles=titles)
