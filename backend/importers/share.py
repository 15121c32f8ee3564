"""`--share URL`: post a trace document to a Tapescope server's POST /api/traces and return its /s/<id> link.

Plain urllib (no torch, no Flask): the body is the document's JSON, with the Origin header the server's
write check asks for (its own scheme and host), so the request reads as the site's own.
"""
import json
import urllib.error
import urllib.request
from urllib.parse import urljoin, urlsplit

TIMEOUT_S = 60


class ShareFailed(RuntimeError):
    """The server refused the document or could not be reached; the message is its sentence and problems."""


def share(document, server_url, timeout_s=TIMEOUT_S):
    """POST `document` to server_url/api/traces; the absolute link of the snapshot it became."""
    parts = urlsplit(server_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ShareFailed(f"{server_url!r} is not a server address like http://127.0.0.1:5000")
    base = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}/"
    body = json.dumps(document, separators=(",", ":"), allow_nan=False).encode("utf-8")
    request = urllib.request.Request(urljoin(base, "api/traces"), data=body, method="POST", headers={
        "Content-Type": "application/json", "Origin": f"{parts.scheme}://{parts.netloc}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            answer = json.loads(response.read())
    except urllib.error.HTTPError as error:
        raise ShareFailed(_refusal(error)) from None
    except (urllib.error.URLError, OSError) as error:
        raise ShareFailed(f"could not reach {base}: {getattr(error, 'reason', error)}") from None
    return urljoin(base, answer["url"].lstrip("/"))


def _refusal(error):
    """"413: The request body is over ...", then each problem's path and message (the first few)."""
    try:
        answer = json.loads(error.read())
    except ValueError:
        return f"the server answered {error.code} {error.reason}"
    lines = [f"the server answered {error.code}: {answer.get('error', error.reason)}"]
    lines += [f"  {p['path']}: {p['message']}" for p in answer.get("problems", [])[:10]]
    return "\n".join(lines)
