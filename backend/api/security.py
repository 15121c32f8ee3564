"""Security headers on every response, and a refusal of any write that is not this origin's own JSON request.

The policy allows no inline script (Plotly does need inline styles) and no framing; Referrer-Policy keeps
snapshot ids, which are secrets in URLs, from leaking to other sites through the Referer header.
"""
from urllib.parse import urlsplit

from flask import Blueprint, abort, request

security = Blueprint("security", __name__)

CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "worker-src 'self' blob:",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
])

SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
OWN_FETCH_SITES = frozenset({"same-origin", "none"})     # "none": the user's own doing (address bar, bookmark)


def is_own_origin(origin: str) -> bool:
    """True when an Origin header names this server's host and port (the scheme may differ behind a proxy)."""
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == request.host.lower()


@security.before_app_request
def refuse_foreign_writes():
    """A request that changes state must come from this origin and carry JSON; anything else is refused first.

    - Sec-Fetch-Site, which every current browser sends: only "same-origin" passes. "same-site" does not: a
      page on 127.0.0.1:8000 is same-site with this server on 127.0.0.1:5000, and not ours.
    - Origin, which browsers send on every POST and PUT (scripts and curl send none): it must be this host.
    - Content-Type: application/json. An HTML form cannot send it, and a cross-origin fetch that does is
      preflighted, which this server never approves (it sends no CORS headers).
    Unknown addresses and methods keep their 404 and 405.
    """
    if request.method in SAFE_METHODS or request.routing_exception is not None:
        return
    site = request.headers.get("Sec-Fetch-Site")
    origin = request.headers.get("Origin")
    if (site is not None and site not in OWN_FETCH_SITES) or (origin is not None and not is_own_origin(origin)):
        abort(403)
    if not request.is_json:
        abort(415)


@security.after_app_request
def add_security_headers(response):
    for name, value in SECURITY_HEADERS.items():
        response.headers[name] = value
    return response
