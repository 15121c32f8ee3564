"""JSON answers gzip-compressed on the wire when the client accepts it: a trace document is mostly repeated keys and
numbers, so gzip shrinks it several times over (docs/trace.md has the measured table). Small answers go as they are
(the header costs more than it saves), and so does anything already encoded or streamed. An answer sent many times
(a kept trace document, api/trace_cache.py) is compressed once, by `gzipped`, and sent with `json_answer`."""
import gzip

from flask import Response, request

MIN_COMPRESSED_BYTES = 1024
GZIP_LEVEL = 5          # within 7% of level 9's size at a sixth of its time on trace documents (bench/wire_bytes.py)


def register_compression(app):
    app.after_request(_compress_json)


def gzipped(body):
    """`body` as this module sends it compressed, or None when it goes as it is (under MIN_COMPRESSED_BYTES)."""
    return gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0) if len(body) >= MIN_COMPRESSED_BYTES else None


def json_answer(body, compressed=None, headers=None):
    """A JSON answer of `body`, sent as `compressed` (gzipped(body), made earlier) when the client accepts gzip (and
    compressed after the request, as every JSON answer is, when there is no such copy)."""
    response = Response(body, mimetype="application/json", headers=headers)
    if compressed is not None and accepts_gzip():
        _send_compressed(response, compressed)
    return response


def _compress_json(response):
    if (response.mimetype != "application/json" or response.direct_passthrough or response.is_streamed
            or "Content-Encoding" in response.headers or not accepts_gzip()):
        return response
    compressed = gzipped(response.get_data())
    if compressed is not None:
        _send_compressed(response, compressed)
    return response


def accepts_gzip():
    """The request's client takes a gzip answer."""
    return "gzip" in request.headers.get("Accept-Encoding", "")


def _send_compressed(response, compressed):
    response.set_data(compressed)
    response.headers["Content-Encoding"] = "gzip"
    response.vary.add("Accept-Encoding")
