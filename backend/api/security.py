"""Security headers on every response, and a refusal of cross-site requests that would change state.

The policy allows no inline script (Plotly does need inline styles) and no framing; Referrer-Policy keeps
snapshot ids, which are secrets in URLs, from leaking to other sites through the Referer header.
"""
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


@security.before_app_request
def refuse_cross_site_writes():
    """Browsers label every request's origin in Sec-Fetch-Site; another site may not write to a workspace."""
    if request.method not in SAFE_METHODS and request.headers.get("Sec-Fetch-Site") == "cross-site":
        abort(403)


@security.after_app_request
def add_security_headers(response):
    for name, value in SECURITY_HEADERS.items():
        response.headers[name] = value
    return response
