"""A real Tapescope served on 127.0.0.1 (an ephemeral port) in a background thread, for tests that talk HTTP to it."""
import threading
from contextlib import contextmanager

from werkzeug.serving import make_server


@contextmanager
def serving(app):
    """The base URL (no trailing slash) of `app` served by werkzeug until the block ends."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="live_server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=5)
