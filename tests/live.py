"""A real Tapescope served on 127.0.0.1 (an ephemeral port) in a background thread, for tests that talk HTTP to it.

`quiet(url)` waits until that server answers nothing: a page a test left may still have a request in flight (a
keepalive save sent on pagehide), whose answer would set the session cookie again after the next test cleared it."""
import threading
from contextlib import contextmanager

from werkzeug.serving import WSGIRequestHandler, make_server


class _Answering:
    """The requests a server is answering, counted per request from its parsed request line to the end of its answer
    (werkzeug's run_wsgi, so a client that hangs up mid-answer is counted out too, and a connection the browser
    opened ahead of need, idle with no request on it, is not counted at all); `wait_quiet` blocks until there are
    none."""

    def __init__(self):
        self.answering = {}                 # handler -> its request line
        self.started = 0                    # requests the server began to answer, ever
        self.changed = threading.Condition()

    def handler_class(self):
        answering = self

        class CountedHandler(WSGIRequestHandler):
            def run_wsgi(self):
                with answering.changed:
                    answering.answering[self] = self.requestline
                    answering.started += 1
                try:
                    super().run_wsgi()
                finally:
                    with answering.changed:
                        answering.answering.pop(self, None)
                        answering.changed.notify_all()

            def log_request(self, *args, **kwargs):    # quiet: the suite's logs are the tests' own
                pass

        return CountedHandler

    def wait_quiet(self, timeout):
        with self.changed:
            if not self.changed.wait_for(lambda: not self.answering, timeout=timeout):
                raise TimeoutError(f"the live server still answers {sorted(self.answering.values())} after {timeout} s")


_SERVED = {}     # base URL -> its _Answering


@contextmanager
def serving(app):
    """The base URL (no trailing slash) of `app` served by werkzeug until the block ends."""
    answering = _Answering()
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=answering.handler_class())
    thread = threading.Thread(target=server.serve_forever, name="live_server", daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}"
    _SERVED[url] = answering
    try:
        yield url
    finally:
        del _SERVED[url]
        server.shutdown()
        thread.join(timeout=5)


def requests_started(url):
    """How many requests the server this process serves at `url` has begun to answer so far."""
    return _SERVED[url].started


def quiet(url, timeout=60.0):
    """Wait until the server this process serves at `url` has answered every request; nothing for another URL."""
    answering = _SERVED.get(url)
    if answering is not None:
        answering.wait_quiet(timeout)
