"""Grad mode and layer scope: `no_grad()` turns recording off; `layer_scope()` labels what is recorded;
`recording_backward()` is the mode a create_graph sweep runs its vjps in. (Named apart from forward vs reverse mode,
which is backend/sweeps and /api/modes.)"""
from contextlib import contextmanager

enabled = True
scope = ""          # the model layer being built ("layers[3]"); tape entries remember it
phase = "forward"   # "backward" while a create_graph sweep records its vjps' own ops; tape entries remember it
watching = False    # while an unrecorded region runs: note whether any op in it read a tensor that requires grad
saw_grad = False


@contextmanager
def layer_scope(name):
    """Label every op recorded inside with `name`, so the trace can group entries by layer."""
    global scope
    previous, scope = scope, name
    try:
        yield
    finally:
        scope = previous


RECORDED_BACKWARD = "backward (recorded)"     # the scope of a vjp's own ops: the second tape


@contextmanager
def recording_backward(create_graph, forward_scope=""):
    """The grad mode a sweep runs one vjp in: recording only under create_graph, its entries labelled phase
    "backward" and scoped "backward (recorded).<the forward entry's scope>"."""
    global enabled, phase, scope
    previous = (enabled, phase, scope)
    enabled = create_graph
    if create_graph:
        phase = "backward"
        scope = f"{RECORDED_BACKWARD}.{forward_scope}" if forward_scope else RECORDED_BACKWARD
    try:
        yield
    finally:
        enabled, phase, scope = previous


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


@contextmanager
def watching_for_grad():
    """Run a block unrecorded and find out whether it touched anything that requires grad.

    Yields a list that holds, once the block is done, one bool: whether any op in it read such a tensor.
    """
    global watching, saw_grad
    previous = (watching, saw_grad)
    watching, saw_grad = True, False
    found = []
    try:
        yield found
    finally:
        found.append(saw_grad)
        watching, saw_grad = previous[0], previous[1] or saw_grad     # an enclosing watcher saw it too


def note_grad(inputs):
    """Called by ops that run unrecorded while `watching`."""
    global saw_grad
    if not saw_grad:
        saw_grad = True in [t.requires_grad for t in inputs]
