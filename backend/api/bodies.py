"""Reading a request body as JSON without trusting it: content type, size, syntax, depth and finite numbers.

Flask's get_json lets a deeply nested body surface as RecursionError (a 500); this reader turns every
malformed body into a 4xx sentence instead.
"""
import json
import math

from flask import abort, request

from backend.api.errors import ApiError

MAX_JSON_DEPTH = 64


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large for a JSON number")
    return value


def json_depth_exceeds(value, max_depth: int) -> bool:
    """Walk the value without recursion; True as soon as nesting goes deeper than max_depth."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _cut_at_the_cap(raw: bytes) -> bool:
    """True when a body without Content-Length (chunked) was cut at MAX_CONTENT_LENGTH with more still coming.

    Werkzeug stops reading such a stream at the cap without saying so; the JSON would then fail to parse and
    answer 400 for what is a 413. One more byte from the server's own stream tells the two apart.
    """
    limit = request.max_content_length
    if limit is None or request.content_length is not None or len(raw) < limit:
        return False
    return bool(request.environ["wsgi.input"].read(1))


def json_body():
    """The request's JSON value, or an ApiError (415/400); a body over MAX_CONTENT_LENGTH raises 413."""
    if not request.is_json:
        raise ApiError(415, "Send the body as JSON, with the header Content-Type: application/json.")
    raw = request.get_data(cache=False)
    if _cut_at_the_cap(raw):
        abort(413)
    try:
        value = json.loads(raw, parse_constant=_reject_constant, parse_float=_finite_float)
    except RecursionError:
        raise ApiError(400, f"The JSON body is nested too deeply; the limit is {MAX_JSON_DEPTH} levels.")
    except ValueError as error:  # includes JSONDecodeError and UnicodeDecodeError
        raise ApiError(400, f"The body is not valid JSON: {error}.")
    if json_depth_exceeds(value, MAX_JSON_DEPTH):
        raise ApiError(400, f"The JSON body is nested too deeply; the limit is {MAX_JSON_DEPTH} levels.")
    return value


def json_object_body(example):
    """The request's JSON body, which must be an object (`example` shows its shape in the 400's sentence)."""
    body = json_body()
    if not isinstance(body, dict):
        raise ApiError(400, f"The body must be a JSON object like {example}.",
                       [{"path": "body", "message": "must be an object"}])
    return body
