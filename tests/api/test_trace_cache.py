"""POST /api/trace answers a request it has answered before from the app's TraceCache, without the engine (and a
share of it stores that document); a class asking for one model at once gets one run and the same document each; a
refused or stopped request keeps nothing. POST /api/modes keeps its reports the same way."""
import gzip
import http.client
import json
import threading
import time

import pytest
from werkzeug.serving import make_server

import backend.driver as driver
from app import create_app
from backend.api.trace_cache import DEFAULT_MAX_BYTES, Answer, TraceCache, request_key
from backend.models import presets
from tests.concurrency import engine_taken
from tests.settings import app_config

SQRT = {"spec": presets.get("deep-mlp"), "checkpoint": {"policy": "sqrt"}}


def test_the_same_request_again_is_the_same_document_without_the_engine(client, monkeypatch):
    first = client.post("/api/trace", json=SQRT)
    assert first.status_code == 200 and first.headers["X-Trace-Cache"] == "miss"
    monkeypatch.setattr(driver, "ENGINE_WAIT_S", 0.05)
    with engine_taken():
        # the same body (its keys in another order) needs none of the engine
        reordered = {"checkpoint": {"policy": "sqrt"}, "spec": dict(reversed(list(SQRT["spec"].items())))}
        sent = json.dumps(reordered)                 # as written: the test client's json= would sort the keys
        assert sent != json.dumps(SQRT, sort_keys=True)
        again = client.post("/api/trace", data=sent, content_type="application/json")
        assert again.status_code == 200 and again.headers["X-Trace-Cache"] == "hit"
        assert again.get_data() == first.get_data()
        # anything else asked is another run, which has to wait for the engine
        for other in ({**SQRT, "checkpoint": {"policy": "sqrt", "preserve_rng_state": False}},
                      {**SQRT, "spec": {**SQRT["spec"], "batch": SQRT["spec"]["batch"] * 2}},
                      {"spec": SQRT["spec"]}):
            busy = client.post("/api/trace", json=other)
            assert busy.status_code == 503, other


def test_a_kept_document_goes_gzipped_to_a_browser_and_plain_to_a_client_that_does_not_ask(client):
    body = {"spec": presets.get("transformer-tiny")}
    first = client.post("/api/trace", json=body, headers={"Accept-Encoding": "gzip, deflate"})
    zipped = client.post("/api/trace", json=body, headers={"Accept-Encoding": "gzip, deflate"})
    plain = client.post("/api/trace", json=body)
    assert [a.headers["X-Trace-Cache"] for a in (first, zipped, plain)] == ["miss", "hit", "hit"]
    assert zipped.headers["Content-Encoding"] == "gzip" and "Accept-Encoding" in zipped.headers["Vary"]
    assert "Content-Encoding" not in plain.headers
    assert zipped.get_data() == first.get_data()                       # compressed once, the same bytes
    assert gzip.decompress(zipped.get_data()) == plain.get_data()
    assert json.loads(plain.get_data())["spec"]["name"] == "transformer-tiny"


def test_sharing_what_was_just_traced_stores_that_document_without_the_engine(client, monkeypatch):
    shown = client.post("/api/trace", json=SQRT).get_json()
    monkeypatch.setattr(driver, "ENGINE_WAIT_S", 0.05)
    with engine_taken():
        shared = client.post("/api/snapshots", json={**SQRT, "view": {"step": 14}})
        assert shared.status_code == 201, shared.get_json()
        assert client.post("/api/snapshots", json={"spec": SQRT["spec"], "view": {"step": 0}}).status_code == 503
    stored = client.get(f"/api/snapshots/{shared.get_json()['id']}").get_json()
    assert stored["trace"] == shown


def test_a_class_asking_for_one_model_at_once_gets_one_run_and_thirty_documents(app):
    """Thirty browsers behind one address open the same model together, on a real threaded server with the engine's
    production wait (1 s): one run (about 0.1 s here) and 29 answers from it. Before the cache the thirty runs queued
    on the one engine, and those still waiting after a second were told 503 (23 to 25 of the 30, measured)."""
    assert driver.ENGINE_WAIT_S == 1.0
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    answers, start = [], threading.Barrier(30)

    def ask():
        start.wait(10)
        connection = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=60)
        connection.request("POST", "/api/trace", json.dumps(SQRT), {"Content-Type": "application/json"})
        response = connection.getresponse()
        answers.append((response.status, response.getheader("X-Trace-Cache"), response.read()))
        connection.close()
    try:
        askers = [threading.Thread(target=ask) for _ in range(30)]
        for asker in askers:
            asker.start()
        for asker in askers:
            asker.join(60)
    finally:
        server.shutdown()
    assert [status for status, _, _ in answers] == [200] * 30
    assert sorted(kept for _, kept, _ in answers) == ["hit"] * 29 + ["miss"]
    assert len({body for _, _, body in answers}) == 1
    assert json.loads(answers[0][2])["schedule"]["policy"] == "sqrt"


def test_the_same_modes_request_again_is_the_same_report_without_the_engine(client, monkeypatch):
    """The forward-vs-reverse report is a function of the model and the direction: asked again (in other words: its
    spec's keys in another order), it needs none of the engine; another direction or model is another run."""
    spec = presets.get("seed-tape")
    first = client.post("/api/modes", json={"spec": spec, "direction": {"element": 1}})
    assert first.status_code == 200 and first.headers["X-Modes-Cache"] == "miss"
    assert first.get_json()["jacobians"]["loss"]["forward"]["sweeps"] > 1
    monkeypatch.setattr(driver, "ENGINE_WAIT_S", 0.05)
    with engine_taken():
        reordered = json.dumps({"direction": {"element": 1}, "spec": dict(reversed(list(spec.items())))})
        again = client.post("/api/modes", data=reordered, content_type="application/json")
        assert again.status_code == 200 and again.headers["X-Modes-Cache"] == "hit"
        assert again.get_data() == first.get_data()
        for other in ({"spec": spec, "direction": {"element": 0}}, {"spec": {**spec, "batch": spec["batch"] * 2}}):
            assert client.post("/api/modes", json=other).status_code == 503, other
    refused = client.post("/api/modes", json={"spec": presets.get("version-error")})      # 400: nothing kept
    assert refused.status_code == 400 and "X-Modes-Cache" not in refused.headers


def test_refused_and_stopped_requests_keep_nothing(client, monkeypatch):
    refused = {"spec": SQRT["spec"], "checkpoint": {"policy": "no-such-policy"}}
    for _ in range(2):
        answer = client.post("/api/trace", json=refused)
        assert answer.status_code == 400 and "X-Trace-Cache" not in answer.headers
    monkeypatch.setattr(driver, "DEADLINE_S", 0.0)
    assert client.post("/api/trace", json=SQRT).status_code == 503       # stopped by its deadline
    monkeypatch.setattr(driver, "DEADLINE_S", 8.0)
    ran = client.post("/api/trace", json=SQRT)
    assert ran.status_code == 200 and ran.headers["X-Trace-Cache"] == "miss"


def test_trace_cache_bytes_zero_keeps_nothing(database_url):
    client = create_app(app_config(database_url, TRACE_CACHE_BYTES=0)).test_client()
    body = {"spec": presets.get("seed-tape")}
    assert [client.post("/api/trace", json=body).headers["X-Trace-Cache"] for _ in range(2)] == ["miss", "miss"]


# ----- the cache on its own ----------------------------------------------------------------------------------------

class Runs:
    """make() for one key: counts its calls, and answers `body` uncompressed (or raises `error`)."""

    def __init__(self, body=b"{}", error=None):
        self.body, self.error, self.calls = body, error, 0

    def __call__(self):
        self.calls += 1
        if self.error is not None:
            raise self.error
        return Answer(self.body, None)


def test_the_least_recently_used_answer_goes_first_under_the_byte_cap():
    cache = TraceCache(max_bytes=40)                  # four 10-byte answers fit
    runs = {key: Runs(key.encode() * 10) for key in "abcde"}
    for key in "abcd":
        cache.answer(key, runs[key], 1)
    assert cache.answer("a", runs["a"], 1) == (Answer(b"a" * 10, None), True)    # a: the most recently used
    cache.answer("e", runs["e"], 1)                                    # 50 bytes: b, the oldest, goes
    assert cache.answer("b", runs["b"], 1) == (Answer(b"b" * 10, None), False)
    assert [runs[key].calls for key in "abcde"] == [1, 2, 1, 1, 1]
    assert cache.answer("a", runs["a"], 1)[1] and not cache.answer("c", runs["c"], 1)[1]    # b pushed c out


def test_an_answer_over_a_quarter_of_the_cap_is_sent_and_not_kept():
    cache, big = TraceCache(max_bytes=40), Runs(b"x" * 11)
    assert cache.answer("big", big, 1) == (Answer(b"x" * 11, None), False)
    assert cache.answer("big", big, 1) == (Answer(b"x" * 11, None), False) and big.calls == 2
    # its gzip counts too: 8 + 3 bytes is over a quarter of 40
    kept = TraceCache(max_bytes=40)
    assert not kept.answer("both", lambda: Answer(b"y" * 8, b"z" * 3), 1)[1]
    assert not kept.answer("both", lambda: Answer(b"y" * 8, b"z" * 3), 1)[1]
    assert kept.answer("fits", lambda: Answer(b"y" * 8, b"z" * 2), 1) == (Answer(b"y" * 8, b"z" * 2), False)
    assert kept.answer("fits", lambda: Answer(b"other", None), 1) == (Answer(b"y" * 8, b"z" * 2), True)


@pytest.mark.parametrize("max_bytes", [DEFAULT_MAX_BYTES, 0])
def test_askers_during_a_run_are_sent_its_answer_kept_or_not(max_bytes):
    """With nothing kept (TRACE_CACHE_BYTES=0, or a document too big to keep) the askers who waited for the run are
    sent its answer all the same, not left to queue on the engine one by one."""
    cache, first_run, waiters_run = TraceCache(max_bytes), Held(Answer(b'{"done": 1}', None)), Runs(b'{"own": 1}')
    answers = run_with_waiters(cache, first_run, waiters_run, waiters=3)
    assert sorted((a.body, shared) for a, shared in answers) == [(b'{"done": 1}', False)] + [(b'{"done": 1}', True)] * 3
    assert waiters_run.calls == 0
    assert cache.answer("key", waiters_run, 1)[1] is (max_bytes > 0)      # kept only when it fits


def test_askers_whose_run_failed_run_their_own():
    cache, waiters_run = TraceCache(), Runs(b'{"own": 1}')
    answers = run_with_waiters(cache, Held(error=RuntimeError("the run was stopped")), waiters_run, waiters=2)
    assert sorted(answers, key=str) == [(Answer(b'{"own": 1}', None), False)] * 2 + [RuntimeError]
    assert waiters_run.calls == 2


def test_a_failed_run_keeps_nothing_and_the_next_asker_runs():
    cache, failing = TraceCache(), Runs(error=ValueError("bad spec"))
    for _ in range(2):
        with pytest.raises(ValueError):
            cache.answer("k", failing, 1)
    assert failing.calls == 2
    assert cache.answer("k", Runs(b"{}"), 1) == (Answer(b"{}", None), False)


def test_the_key_is_the_request_whatever_the_order_of_its_keys():
    spec = presets.get("seed-tape")
    assert request_key(spec, None) == request_key(dict(reversed(list(spec.items()))), None)
    assert request_key(spec, None) != request_key(spec, {"policy": "sqrt"})
    assert request_key(spec, {"policy": "every_k", "k": 1}) != request_key(spec, {"policy": "every_k", "k": 2})


class Held(Runs):
    """make() that answers (or raises) only once released."""

    def __init__(self, body=None, error=None):
        super().__init__(body, error)
        self.started, self.release = threading.Event(), threading.Event()

    def __call__(self):
        self.started.set()
        assert self.release.wait(10)
        if self.error is not None:
            self.calls += 1
            raise self.error
        self.calls += 1
        return self.body


def run_with_waiters(cache, first_run, waiters_run, waiters):
    """`first_run` under way for "key", then `waiters` more askers of "key", released once all of them wait on it:
    every answer (or RuntimeError for one that raised it)."""
    answers = []

    def ask(make):
        try:
            answers.append(cache.answer("key", make, 10))
        except RuntimeError:
            answers.append(RuntimeError)
    first = threading.Thread(target=ask, args=(first_run,))
    first.start()
    assert first_run.started.wait(10)
    others = [threading.Thread(target=ask, args=(waiters_run,)) for _ in range(waiters)]
    for other in others:
        other.start()
    flight = cache._flights["key"]
    while flight.waiting < waiters:          # every asker is waiting on the run before it ends
        time.sleep(0.001)
    first_run.release.set()
    for thread in [first, *others]:
        thread.join(10)
    return answers
