"""The engine, one run at a time per process, and a prompt "busy" instead of a queue behind it.

The engine's event bus, address space and generator are process-wide: one traced run at a time per process
(threaded servers and test clients in threads); gunicorn's workers are separate processes, each with its own.
A request that cannot take the engine within ENGINE_WAIT_S gets EngineBusy, with a Retry-After taken from
the running request's deadline, instead of waiting behind it.
"""
import math
import threading
import time
from contextlib import contextmanager

ENGINE_WAIT_S = 1.0

_lock = threading.Lock()
_busy_until = 0.0            # monotonic time by which the running request ends (its deadline)


class EngineBusy(Exception):
    """The engine is running another request; `retry_after_s` is when it will be free at the latest."""

    def __init__(self, retry_after_s):
        self.retry_after_s = retry_after_s
        super().__init__(f"the engine is busy with another request; try again in {retry_after_s} s")


@contextmanager
def holding_engine(wait_s, deadline_s):
    """Hold the engine for one request that ends within `deadline_s`; EngineBusy after `wait_s` of waiting."""
    global _busy_until
    if not _lock.acquire(timeout=wait_s):
        raise EngineBusy(max(1, math.ceil(_busy_until - time.monotonic())))
    try:
        _busy_until = time.monotonic() + deadline_s
        yield
    finally:
        _lock.release()
