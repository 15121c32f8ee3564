"""Errors as JSON under /api/ ({"error": sentence, "problems"?: [...]}); elsewhere the usual HTML pages.

User input must never produce a 500: handlers raise ApiError (or a werkzeug HTTPException) for anything
a client got wrong, and this module turns it into a response. Genuine bugs still log and return 500.
"""
from flask import Blueprint, jsonify, request
from werkzeug.exceptions import HTTPException

from backend.driver import EngineBusy, TimeBudgetExceeded
from backend.models.errors import CapError, SpecError
from backend.planner.policies import PolicyError
from backend.problems import Problems
from backend.store.budget import BudgetFull
from backend.store.engine import StorageBusy, StorageFull, StorageReadOnly, StorageUnavailable

api_errors = Blueprint("api_errors", __name__)

SENTENCES = {
    400: "The request could not be understood; check its body against docs/api.md.",
    403: "Only this site's own pages may change a workspace or share a snapshot (checked by Origin and Sec-Fetch-Site).",
    404: "Nothing lives at this address.",
    405: "This address does not accept {method}.",
    413: "The request body is over the {limit}-byte limit; send a smaller spec or fewer history entries.",
    415: "Send the body as JSON, with the header Content-Type: application/json.",
    429: "Too many requests from your address; wait a little and try again.",
    500: "Something went wrong on the server; the error was logged.",
}


class ApiError(Exception):
    """A client error with a sentence for people and, for validation, {path, message} problems (capped)."""

    def __init__(self, status: int, message: str, problems: list | None = None, headers: dict | None = None,
                 **extra):
        super().__init__(message)
        self.status, self.message, self.extra, self.headers = status, message, extra, headers or {}
        self.problems = None if problems is None else Problems.of(problems)


def wants_json() -> bool:
    return request.path.startswith("/api/")


@api_errors.app_errorhandler(ApiError)
def api_error(error: ApiError):
    body = {"error": error.message, **error.extra}
    if error.problems is not None:
        body.update(error.problems.as_json())       # the first MAX_LISTED and a count of all
    return jsonify(body), error.status, error.headers


@api_errors.app_errorhandler(CapError)
def over_a_cap(error: CapError):
    """A spec over a size cap: 413 naming the cap, its limit and what was asked for."""
    return api_error(ApiError(413, error.message, error.problems, cap=error.cap, limit=error.limit,
                              requested=error.requested))


@api_errors.app_errorhandler(SpecError)
def bad_request(error: SpecError):
    """A spec or checkpoint request with problems: 400 with every problem and its path."""
    what = "checkpoint request" if isinstance(error, PolicyError) else "spec"
    return api_error(ApiError(400, f"The {what} has problems; fix them and try again.", error.problems))


@api_errors.app_errorhandler(EngineBusy)
def engine_busy(error: EngineBusy):
    """Another request holds the engine: 503 at once, with when to come back, rather than a queue."""
    return _unavailable(503, f"The engine is busy with another trace; try again in {error.retry_after_s} s.",
                        error.retry_after_s)


@api_errors.app_errorhandler(TimeBudgetExceeded)
def over_time(error: TimeBudgetExceeded):
    """A run that passed its deadline was stopped (the server is busier than its work cap assumes): 503."""
    return _unavailable(503, f"The trace took longer than its {error.limit_s:g} s budget and was stopped; the "
                             "server is busy, so try again shortly, or trace a smaller model.", 5)


# What a write the database could not take is answered: status, sentence, Retry-After seconds. The write was
# rolled back whole; everything acknowledged before it is still there.
UNAVAILABLE = {
    StorageFull: (507, "The server's disk is full, so nothing was saved; everything saved before is safe. "
                       "Try again later.", 300),
    BudgetFull: (507, "The server's storage budget is full of shared links still within their retention, so "
                      "nothing was saved; everything saved before is safe. Try again later.", 3600),
    StorageReadOnly: (503, "The server's database is read-only just now: links and workspaces can be read but "
                           "not changed, and nothing was saved. Try again later.", 300),
    StorageBusy: (503, "The database is busy and nothing was saved; try again in a moment.", 5),
}


@api_errors.app_errorhandler(StorageUnavailable)
def storage_unavailable(error: StorageUnavailable):
    return _unavailable(*UNAVAILABLE.get(type(error), UNAVAILABLE[StorageBusy]))


def _unavailable(status: int, sentence: str, retry_after_s: int):
    """A 503 or 507 at once, saying when to come back (Retry-After, and in the body), never cached."""
    return api_error(ApiError(status, sentence, retry_after_s=retry_after_s,
                              headers={"Retry-After": str(retry_after_s), "Cache-Control": "no-store"}))


@api_errors.app_errorhandler(HTTPException)
def http_error(error: HTTPException):
    if not wants_json():
        return error
    sentence = SENTENCES.get(error.code, error.name)
    sentence = sentence.format(method=request.method, limit=request.max_content_length)
    if error.code == 429 and error.description:   # the rate limiter's sentence names the limit
        sentence = error.description
    response = jsonify({"error": sentence})
    if error.code == 405 and error.valid_methods:  # keep the Allow header werkzeug computed
        response.headers["Allow"] = ", ".join(error.valid_methods)
    return response, error.code
