"""JSON answers gzip-compressed on the wire when the client accepts it: a trace document is mostly repeated keys and
numbers, so gzip shrinks it several times over (docs/trace.md has the measured table). Small answers go as they are
(the header costs more than it saves), and so does anything already encoded or streamed."""
import gzip

from flask import request

MIN_COMPRESSED_BYTES = 1024
GZIP_LEVEL = 5          # within 7% of level 9's size at a sixth of its time on trace documents (bench/wire_bytes.py)


def register_compression(app):
    app.after_request(_compress_json)


def _compress_json(response):
    if (response.mimetype != "application/json" or response.direct_passthrough or response.is_streamed
            or "Content-Encoding" in response.headers or "gzip" not in request.headers.get("Accept-Encoding", "")):
        return response
    body = response.get_data()
    if len(body) < MIN_COMPRESSED_BYTES:
        return response
    response.set_data(gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0))
    response.headers["Content-Encoding"] = "gzip"
    response.vary.add("Accept-Encoding")
    return response
