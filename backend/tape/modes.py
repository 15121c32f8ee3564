"""Grad mode: `no_grad()` turns recording off; `enabled` is read on every op."""
from contextlib import contextmanager

enabled = True


@contextmanager
def no_grad():
    """Run ops without recording: nothing is appended to the tape and nothing is saved."""
    global enabled
    previous, enabled = enabled, False
    try:
        yield
    finally:
        enabled = previous


@contextmanager
def enable_grad():
    global enabled
    previous, enabled = enabled, True
    try:
        yield
    finally:
        enabled = previous
