"""A real Tapescope served on 127.0.0.1 (an ephemeral port) in a background thread, for tests that talk HTTP to it.

`quiet(url)` waits until that server answers nothing: a page a test left may still have a request in flight (a
keepalive save sent on pagehide), whose answer would set the session cookie again after the next test cleared it."""
import itertools
import threading
from contextlib import contextmanager

from werkzeug.serving import make_server
from werkzeug.wsgi import ClosingIterator


class _InFlight:
    """WSGI middleware counting the requests the app is answering; `wait_quiet` blocks until none is."""

    def __init__(self, app):
        self.app = app
        self.answering = {}                 # id -> "METHOD /path", for a wait that times out to name them
        self.changed = threading.Condition()
        self.ids = itertools.count()

    def __call__(self, environ, start_response):
        request = next(self.ids)
        with self.changed:
            self.answering[request] = f"{environ['REQUEST_METHOD']} {environ.get('PATH_INFO', '')}"
        answered = lambda: self._answered(request)      # noqa: E731
        try:
            answer = self.app(environ, start_response)
        except BaseException:
            answered()
            raise
        return ClosingIterator(answer, answered)     # closes the app's iterable too, then counts it answered

    def _answered(self, request):
        with self.changed:
            self.answering.pop(request, None)
            self.changed.notify_all()

    def wait_quiet(self, timeout):
        with self.changed:
            if not self.changed.wait_for(lambda: not self.answering, timeout=timeout):
                raise TimeoutError(f"the live server still answers {sorted(self.answering.values())} after {timeout} s")


_SERVED = {}     # base URL -> its _InFlight


@contextmanager
def serving(app):
    """The base URL (no trailing slash) of `app` served by werkzeug until the block ends."""
    counted = _InFlight(app)
    server = make_server("127.0.0.1", 0, counted, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="live_server", daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}"
    _SERVED[url] = counted
    try:
        yield url
    finally:
        del _SERVED[url]
        server.shutdown()
        thread.join(timeout=5)


def quiet(url, timeout=60.0):
    """Wait until the server this process serves at `url` has answered every request; nothing for another URL."""
    counted = _SERVED.get(url)
    if counted is not None:
        counted.wait_quiet(timeout)
