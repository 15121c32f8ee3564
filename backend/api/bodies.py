"""Reading a request body as JSON without trusting it: content type, size, syntax, depth and finite numbers.

Flask's get_json lets a deeply nested body surface as RecursionError (a 500), and a lone surrogate escape
("\\ud800") parses into a string nothing downstream can encode (a 500 where it is stored); this reader turns
every malformed body into a 4xx sentence instead.
"""
import json
import math

from flask import abort, request

from backend.api.errors import ApiError
from backend.models.caps import cap


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large for a JSON number")
    return value


def body_problem(value, max_depth: int):
    """One walk of the parsed body, without recursion: (path, sentence) for nesting deeper than `max_depth` or for
    a string that is not text (JSON's "\\ud800" escape parses to a lone surrogate, which no store or page can
    encode), or None when the body is sound."""
    stack = [(value, 1, "")]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, dict):
            items = node.items()
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            continue
        if depth > max_depth:
            return path or "body", f"The JSON body is nested too deeply; the limit is {max_depth} levels."
        for key, child in items:
            for text in (key, child):
                if isinstance(text, str) and not _encodable(text):
                    where = _joined(path, key if _encodable(str(key)) else ascii(key))[:200]
                    return where, (f"The JSON body holds a string that is not text at {where} (a lone surrogate "
                                   "escape such as \\ud800); send UTF-8 text.")
            # only containers go on the stack: a list of 300,000 numbers once pushed 300,000 tuples (17 MB)
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1, _joined(path, key)))
    return None


def _joined(path, key):
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _encodable(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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
        raise ApiError(400, f"The JSON body is nested too deeply; the limit is {cap('json_depth')} levels.")
    except ValueError as error:  # includes JSONDecodeError and UnicodeDecodeError
        raise ApiError(400, f"The body is not valid JSON: {error}.")
    problem = body_problem(value, cap("json_depth"))
    if problem is not None:
        path, sentence = problem
        raise ApiError(400, sentence, [{"path": path, "message": sentence}])
    return value


def json_object_body(example):
    """The request's JSON body, which must be an object (`example` shows its shape in the 400's sentence)."""
    body = json_body()
    if not isinstance(body, dict):
        raise ApiError(400, f"The body must be a JSON object like {example}.",
                       [{"path": "body", "message": "must be an object"}])
    return body
