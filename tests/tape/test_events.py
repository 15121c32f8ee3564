"""The engine's event kinds are declared once (backend/tape/events.py): every emit in backend names a declared kind
with its declared payload (read from the source), the listeners' handlers take exactly those fields, and an
undeclared kind, payload or handler fails at once."""
import ast
import inspect
from pathlib import Path

import numpy as np
import pytest

from backend.sweeps.meter import SweepMeter
from backend.tape import events, parameter, tensor
from backend.trace.recorder import Recorder

BACKEND = Path(__file__).resolve().parents[2] / "backend"


def emits():
    """(file:line, kind constant's name, keyword names) of every events.emit(...) call in backend."""
    found = []
    for path in sorted(BACKEND.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "emit" \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "events":
                kind = node.args[0]
                name = kind.attr if isinstance(kind, ast.Attribute) and isinstance(kind.value, ast.Name) \
                    and kind.value.id == "events" else ast.unparse(kind)
                found.append((f"{path.relative_to(BACKEND.parent)}:{node.lineno}", name,
                              sorted(k.arg for k in node.keywords)))
    return found


EMITS = emits()


def test_the_reader_finds_the_engines_emits():
    assert len(EMITS) >= 37 and any(where.startswith("backend/tape/engine.py") for where, _, _ in EMITS)


@pytest.mark.parametrize("where, name, fields", EMITS, ids=[where for where, _, _ in EMITS])
def test_every_emit_names_a_declared_kind_with_its_payload(where, name, fields):
    kind = getattr(events, name, None)
    assert kind in events.KINDS, f"{where} emits {name}, not one of events.py's declared kinds"
    assert fields == sorted(events.KINDS[kind].fields), f"{where}: {name}'s payload is not the declared one"


def test_every_declared_kind_is_emitted_somewhere():
    emitted = {getattr(events, name, None) for _, name, _ in EMITS}
    assert sorted(set(events.KINDS) - emitted) == []


@pytest.mark.parametrize("listener", [Recorder, SweepMeter])
def test_each_handler_takes_its_kinds_payload(listener):
    for kind, handler in events.handlers(listener()).items():
        assert list(inspect.signature(handler).parameters) == list(events.KINDS[kind].fields), \
            f"{listener.__name__}.on_{kind}"


def test_the_recorder_hears_every_kind():
    assert set(events.handlers(Recorder(), every=True)) == set(events.KINDS)


def test_an_undeclared_kind_or_payload_fails_loudly():
    with events.listening(lambda kind, payload: None):
        with pytest.raises(events.UnknownEvent, match="'alocc' is not declared"):
            events.emit("alocc", storage=None)
        with pytest.raises(events.UnknownEvent, match=r"declares its payload as \['storage'\]"):
            events.emit(events.FREE, storage=None, node=None)
        with pytest.raises(events.UnknownEvent, match="declares its payload"):
            events.emit(events.ALLOC, tensor=None, storage=None)


def test_a_handler_for_no_kind_fails_when_the_listener_is_made():
    class Typo:
        def on_alocc(self, tensor, storage, node):
            pass

    with pytest.raises(events.UnknownEvent, match="Typo.on_alocc handles no declared event kind"):
        events.handlers(Typo())
    with pytest.raises(events.UnknownEvent, match="no handler for"):
        events.handlers(SweepMeter(), every=True)


def test_a_run_emits_only_declared_kinds():
    heard = []
    w = parameter(np.ones((3, 2)))
    with events.listening(lambda kind, payload: heard.append(kind)):
        ((tensor(np.ones((4, 3))) @ w).tanh().sum()).backward()
    assert {events.ALLOC, events.RECORD, events.SAVE, events.NODE_BEGIN, events.ACCUMULATE_LEAF} <= set(heard)
    assert set(heard) <= set(events.KINDS)
