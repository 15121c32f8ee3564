"""Trace API: GET /api/presets and POST /api/trace (a spec in, the trace document out; the same request answered
again from the app's TraceCache, api/trace_cache.py, as `answered` does for every request that runs the engine)."""
from flask import Blueprint, current_app, jsonify

from backend import driver
from backend.api.bodies import json_object_body
from backend.api.compression import accepts_gzip, gzipped, json_answer
from backend.api.errors import ApiError
from backend.api.trace_cache import DEFAULT_MAX_BYTES, Answer, TraceCache, request_key
from backend.models import presets
from backend.trace.document_versions import pack

trace_api = Blueprint("trace_api", __name__)
CACHE = "tapescope.trace_cache"
MODES_CACHE = "tapescope.modes_cache"      # POST /api/modes' reports (api/modes.py), under the same byte cap


@trace_api.record_once
def _make_caches(state):
    for name in (CACHE, MODES_CACHE):
        state.app.extensions[name] = TraceCache(state.app.config.get("TRACE_CACHE_BYTES", DEFAULT_MAX_BYTES))


def engine_limits():
    """How long a request may wait for the engine and run on it: the driver's defaults (1 s, 8 s) unless the app's
    config sets ENGINE_WAIT_S / ENGINE_DEADLINE_S (the browser tests' one shared server queues its pages instead)."""
    config = current_app.config
    return {"wait_s": config.get("ENGINE_WAIT_S"), "deadline_s": config.get("ENGINE_DEADLINE_S")}


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
    document, kept = traced(body["spec"], body.get("checkpoint"))
    return json_answer(document.body, document.compressed, {"X-Trace-Cache": "hit" if kept else "miss"})


def traced(spec, checkpoint):
    """(the Answer of `spec` and `checkpoint`: the document's JSON as POST /api/trace sends it, and its gzip when the
    asker that ran it accepted gzip; True when this request ran nothing, TraceCache having the answer). Raises what
    trace_spec raises."""
    return answered(CACHE, request_key(spec, checkpoint),
                    lambda limits: pack(driver.trace_spec(spec, checkpoint=checkpoint, **limits)))


def answered(cache, key, run):
    """(the Answer kept in the app's cache `cache` for `key`, or run(engine_limits())'s, a JSON-able object, sent as
    this request's answer: its JSON, and its gzip when the asker accepts gzip; True when this request ran nothing)."""
    limits = engine_limits()

    def answer():
        body = current_app.json.response(run(limits)).get_data()
        return Answer(body, gzipped(body) if accepts_gzip() else None)
    # an asker behind a run of the same request waits as long as the engine would have kept it waiting, and the run
    wait_s = driver.ENGINE_WAIT_S if limits["wait_s"] is None else limits["wait_s"]
    deadline_s = driver.DEADLINE_S if limits["deadline_s"] is None else limits["deadline_s"]
    return current_app.extensions[cache].answer(key, answer, wait_s + deadline_s)
