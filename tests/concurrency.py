"""Run a worker in N threads at once and wait for all of them (the concurrency tests' shared harness), and hold the
engine as another request would."""
import threading
from contextlib import contextmanager

from backend.driver.engine_slot import holding_engine


def run_threads(worker, count, with_index=True):
    threads = [threading.Thread(target=worker, args=(i,) if with_index else ()) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@contextmanager
def engine_taken():
    """The engine held by another request (a thread in engine_slot) for the block's length."""
    taken, release = threading.Event(), threading.Event()

    def hold():
        with holding_engine(0, 30.0):
            taken.set()
            release.wait(30)
    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert taken.wait(5)
    try:
        yield
    finally:
        release.set()
        thread.join(5)
