"""A real Tapescope served on 127.0.0.1 (an ephemeral port) in a background thread, for tests that talk HTTP to it.

`quiet(url)` waits until that server answers nothing: a page a test left may still have a request in flight (a
keepalive save sent on pagehide), whose answer would set the session cookie again after the next test cleared it."""
import threading
from contextlib import contextmanager

from werkzeug.serving import WSGIRequestHandler, make_server


class _Answering:
    """The connections a server is handling, counted per connection (its handler's whole life, so a client that
    hangs up mid-answer is counted out too); `wait_quiet` blocks until there are none."""

    def __init__(self):
        self.handlers = set()
        self.changed = threading.Condition()

    def handler_class(self):
        answering = self

        class CountedHandler(WSGIRequestHandler):
            def handle(self):
                with answering.changed:
                    answering.handlers.add(self)
                try:
                    super().handle()
                finally:
                    with answering.changed:
                        answering.handlers.discard(self)
                        answering.changed.notify_all()

            def log_request(self, *args, **kwargs):    # quiet: the suite's logs are the tests' own
                pass

        return CountedHandler

    def wait_quiet(self, timeout):
        with self.changed:
            if not self.changed.wait_for(lambda: not self.handlers, timeout=timeout):
                lines = sorted(getattr(handler, "requestline", "(reading the request)") for handler in self.handlers)
                raise TimeoutError(f"the live server still answers {lines} after {timeout} s")


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


def quiet(url, timeout=60.0):
    """Wait until the server this process serves at `url` has answered every request; nothing for another URL."""
    answering = _SERVED.get(url)
    if answering is not None:
        answering.wait_quiet(timeout)
