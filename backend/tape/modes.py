"""Grad mode and layer scope: `no_grad()` turns recording off; `layer_scope()` labels what is recorded."""
from contextlib import contextmanager

enabled = True
scope = ""          # the model layer being built ("layers[3]"); tape entries remember it


@contextmanager
def layer_scope(name):
    """Label every op recorded inside with `name`, so the trace can group entries by layer."""
    global scope
    previous, scope = scope, name
    try:
        yield
    finally:
        scope = previous


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
