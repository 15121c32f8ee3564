"""The answers of recent POST /api/trace requests, by what was asked: a class opening one preset at one address runs
it once. POST /api/modes keeps its reports the same way, in a cache of its own.

A trace is a function of its request (the spec, seeds included, and the checkpoint request): the same body gets the
same document, so the answer's JSON is kept (least recently used first out, under a byte cap) and sent again without
the engine (and its gzip, made once). Requests for one body that arrive while its first run is still going wait for
that run and are sent its answer, kept or not, instead of queueing on the engine behind it (each would otherwise take
the engine in turn, and past the engine's wait answer 503).
Only documents are kept: a refused request (400, 413) or a stopped run (503) leaves nothing, and the next asker runs
it. Per process, like the engine (each gunicorn worker keeps its own).
"""
import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass

DEFAULT_MAX_BYTES = 64 * 2**20        # ~30 transformer-tiny documents; set TRACE_CACHE_BYTES (0: keep none)
LARGEST_SHARE = 4                     # a document over max_bytes / LARGEST_SHARE is sent, not kept


@dataclass(frozen=True)
class Answer:
    """A document's JSON and its gzip (api/compression.gzipped), the gzip None for a small document or when the asker
    that ran it took no gzip (a later asker who does gets it compressed per answer)."""
    body: bytes
    compressed: bytes | None

    @property
    def nbytes(self):
        return len(self.body) + len(self.compressed or b"")


def request_key(spec, asked):
    """A digest of the request as asked (keys in any order): the same body, the same key. `asked`: what the request
    names besides its spec (a trace's checkpoint request, the modes' direction)."""
    text = json.dumps({"spec": spec, "asked": asked}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Flight:
    """A first run of one key, going: the askers waiting for it, and its Answer once it has one."""

    def __init__(self):
        self.done = threading.Event()
        self.waiting = 0
        self.answer = None


class TraceCache:
    """`answer(key, make, wait_s)`: the Answer kept for `key`, or `make()`'s (kept when it fits)."""

    def __init__(self, max_bytes=DEFAULT_MAX_BYTES):
        self.max_bytes = max_bytes
        self._kept = OrderedDict()     # key -> Answer, least recently used first
        self._kept_bytes = 0
        self._flights = {}             # key -> _Flight while its first run goes
        self._lock = threading.Lock()

    def answer(self, key, make, wait_s):
        """(the Answer, True when this request ran nothing: kept from before, or another asker's run it waited for).
        A run of `key` already going is waited for, up to `wait_s`; past that, or when it failed, this request runs
        its own."""
        with self._lock:
            kept = self._take(key)
            if kept is not None:
                return kept, True
            flight = self._flights.get(key)
            first = flight is None
            if first:
                flight = self._flights[key] = _Flight()
            else:
                flight.waiting += 1
        if not first:
            flight.done.wait(wait_s)
            if flight.answer is not None:
                return flight.answer, True
            return make(), False
        try:
            flight.answer = make()
            self._keep(key, flight.answer)
            return flight.answer, False
        finally:
            with self._lock:
                del self._flights[key]
            flight.done.set()

    def _take(self, key):
        kept = self._kept.get(key)
        if kept is not None:
            self._kept.move_to_end(key)
        return kept

    def _keep(self, key, answer):
        if answer.nbytes > self.max_bytes // LARGEST_SHARE:
            return
        with self._lock:
            if key in self._kept:
                return
            self._kept[key] = answer
            self._kept_bytes += answer.nbytes
            while self._kept_bytes > self.max_bytes:
                _, dropped = self._kept.popitem(last=False)
                self._kept_bytes -= dropped.nbytes
