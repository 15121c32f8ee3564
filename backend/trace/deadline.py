"""A run's time budget: a cooperative deadline that the recorder, the driver and the planner check in their loops.

The deadline belongs to the thread running the request (a context variable), so a check elsewhere is a no-op.
Past it, `check` raises TimeBudgetExceeded: the run stops between two steps, the engine lock is released by
the driver, and the API answers 503. Nothing is killed, so the worker lives on.
"""
import time
from contextlib import contextmanager
from contextvars import ContextVar

_ends_at = ContextVar("tapescope_deadline", default=None)     # (monotonic end, the limit in seconds)


class TimeBudgetExceeded(Exception):
    """A run went past its time budget and was stopped."""

    def __init__(self, limit_s):
        self.limit_s = limit_s
        super().__init__(f"the run went past its {limit_s:g} s time budget and was stopped")


@contextmanager
def running(limit_s):
    """Everything inside the with-block shares one deadline `limit_s` seconds from now (None: no deadline)."""
    token = _ends_at.set(None if limit_s is None else (time.monotonic() + limit_s, limit_s))
    try:
        yield
    finally:
        _ends_at.reset(token)


def check():
    """Raise TimeBudgetExceeded when this thread's run is past its deadline."""
    current = _ends_at.get()
    if current is not None and time.monotonic() > current[0]:
        raise TimeBudgetExceeded(current[1])


def remaining_s():
    """Seconds left (None without a deadline)."""
    current = _ends_at.get()
    return None if current is None else max(0.0, current[0] - time.monotonic())


def limit(seconds):
    """`seconds`, or less when the deadline comes first (a solver's own time limit)."""
    left = remaining_s()
    return seconds if left is None else max(0.01, min(seconds, left))
