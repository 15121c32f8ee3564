"""The engine's event bus: listeners attached for a run hear every alloc, save, free, vjp and accumulation.

With no listener attached, `active` is False and the engine skips building events entirely, so an
un-traced run pays one boolean check per event site.
"""
from contextlib import contextmanager

_listeners = []
active = False


def emit(kind, **payload):
    """Deliver one event to every attached listener (callers check `events.active` first)."""
    for listener in _listeners:
        listener(kind, payload)


@contextmanager
def listening(listener):
    """Attach `listener(kind, payload)` for the duration of a with-block."""
    global active
    _listeners.append(listener)
    active = True
    try:
        yield listener
    finally:
        _listeners.remove(listener)
        active = bool(_listeners)
